/*
 * valkey_module_api.h: the few Module API functions the EMQ module uses.
 *
 * Debian's valkey-server package ships no module header, so Flows Lab
 * declares here, in its own words, just what emq_module.c calls. The
 * signatures follow the documented Module API of Valkey 8 (the same API
 * Redis OSS 7 documents under the RedisModule_ prefix).
 *
 * How a module reaches the server: the server dlopen()s the shared object
 * and calls its exported ValkeyModule_OnLoad (or RedisModule_OnLoad). The
 * first word of the context it passes is a pointer to GetApi, a lookup
 * function: GetApi("ValkeyModule_Call", &ptr) stores the server's Call in
 * ptr. Nothing is linked against the server; every call goes through a
 * function pointer filled in by emq_api_init() below.
 */
#ifndef EMQ_VALKEY_MODULE_API_H
#define EMQ_VALKEY_MODULE_API_H

#include <stddef.h>

/* Return codes of the API, and the one API version that exists. */
#define VALKEYMODULE_OK 0
#define VALKEYMODULE_ERR 1
#define VALKEYMODULE_APIVER_1 1

/* What CallReplyType answers (RESP2 replies only: we never ask for RESP3). */
#define VALKEYMODULE_REPLY_STRING 0
#define VALKEYMODULE_REPLY_ERROR 1
#define VALKEYMODULE_REPLY_INTEGER 2
#define VALKEYMODULE_REPLY_ARRAY 3
#define VALKEYMODULE_REPLY_NULL 4

/* Opaque to a module: the server owns their layout. */
typedef struct ValkeyModuleCtx ValkeyModuleCtx;
typedef struct ValkeyModuleString ValkeyModuleString;
typedef struct ValkeyModuleCallReply ValkeyModuleCallReply;

/* A command's implementation: argv[0] is the command name itself. */
typedef int (*ValkeyModuleCmdFunc)(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc);

/* One translation unit includes this file, so the pointers are static. */

/* Looks an API function up by name and stores it through the second argument. */
static int (*ValkeyModule_GetApi)(const char *name, void *out);
/* Names the module (MODULE LIST shows it) and records the API version it uses. */
static void (*ValkeyModule_SetModuleAttribs)(ValkeyModuleCtx *ctx, const char *name, int ver, int apiver);
/* Registers a command; strflags such as "write deny-oom getkeys-api". */
static int (*ValkeyModule_CreateCommand)(ValkeyModuleCtx *ctx, const char *name, ValkeyModuleCmdFunc fn,
                                         const char *strflags, int firstkey, int lastkey, int keystep);
/* With "getkeys-api": is this call only asking where the keys are? Then
 * KeyAtPos reports each key's argv index and the command must not run. */
static int (*ValkeyModule_IsKeysPositionRequest)(ValkeyModuleCtx *ctx);
static void (*ValkeyModule_KeyAtPos)(ValkeyModuleCtx *ctx, int pos);
/* Frees every call reply and string of this command when it returns. */
static void (*ValkeyModule_AutoMemory)(ValkeyModuleCtx *ctx);

/* Replies to the client. ReplyWithError("CODE text") sends -CODE text. */
static int (*ValkeyModule_WrongArity)(ValkeyModuleCtx *ctx);
static int (*ValkeyModule_ReplyWithError)(ValkeyModuleCtx *ctx, const char *err);
static int (*ValkeyModule_ReplyWithLongLong)(ValkeyModuleCtx *ctx, long long value);
static int (*ValkeyModule_ReplyWithStringBuffer)(ValkeyModuleCtx *ctx, const char *buf, size_t len);
static int (*ValkeyModule_ReplyWithCallReply)(ValkeyModuleCtx *ctx, ValkeyModuleCallReply *reply);

/* The bytes of an argument, and an argument read as a whole number. */
static const char *(*ValkeyModule_StringPtrLen)(const ValkeyModuleString *str, size_t *len);
static int (*ValkeyModule_StringToLongLong)(const ValkeyModuleString *str, long long *out);

/* Runs a server command. fmt gives one letter per argument: 's' a
 * ValkeyModuleString, 'c' a C string, 'b' a buffer and its length, 'l' a
 * long long. Modifiers take no argument: '!' propagates the command to
 * replicas and the AOF; 'C' runs it as the user of the client that called
 * the module (its ACL applies: key patterns and commands); 'E' hands an
 * error found before the command ran (such as the ACL's NOPERM) back as an
 * error reply instead of NULL; 'D' is a dry run: every check, no execution,
 * NULL when the command would run, else its error reply. All four exist in
 * Valkey 8 (C and E since Redis OSS 7.0, D since 7.2, which Valkey forked).
 * NULL when the call could not even start (errno says why). */
static ValkeyModuleCallReply *(*ValkeyModule_Call)(ValkeyModuleCtx *ctx, const char *cmd, const char *fmt, ...);
static int (*ValkeyModule_CallReplyType)(ValkeyModuleCallReply *reply);
static long long (*ValkeyModule_CallReplyInteger)(ValkeyModuleCallReply *reply);
static const char *(*ValkeyModule_CallReplyStringPtr)(ValkeyModuleCallReply *reply, size_t *len);
static size_t (*ValkeyModule_CallReplyLength)(ValkeyModuleCallReply *reply);
static ValkeyModuleCallReply *(*ValkeyModule_CallReplyArrayElement)(ValkeyModuleCallReply *reply, size_t idx);

/* Fill one pointer: Valkey registers every function under both prefixes;
 * a Redis OSS server knows only the RedisModule_ one. */
static int emq_api_get(const char *name, void *out) {
    char full[64];
    const char *prefixes[] = {"ValkeyModule_", "RedisModule_"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t p = 0, n = 0;
        while (prefixes[i][p] && p < sizeof(full) - 1) { full[p] = prefixes[i][p]; p++; }
        while (name[n] && p + n < sizeof(full) - 1) { full[p + n] = name[n]; n++; }
        full[p + n] = '\0';
        if (ValkeyModule_GetApi(full, out) == VALKEYMODULE_OK) return VALKEYMODULE_OK;
    }
    return VALKEYMODULE_ERR;
}

#define EMQ_API(fn) (emq_api_get(#fn, (void *)&ValkeyModule_##fn) == VALKEYMODULE_OK)

/* The module's init: GetApi from the context's first pointer, then every
 * function above; ERR when the server lacks one of them. */
static int emq_api_init(ValkeyModuleCtx *ctx, const char *name, int ver) {
    void *getapi = ((void **)ctx)[0];
    ValkeyModule_GetApi = (int (*)(const char *, void *))(unsigned long)getapi;
    int ok = EMQ_API(SetModuleAttribs) && EMQ_API(CreateCommand) && EMQ_API(IsKeysPositionRequest) &&
             EMQ_API(KeyAtPos) && EMQ_API(AutoMemory) && EMQ_API(WrongArity) && EMQ_API(ReplyWithError) &&
             EMQ_API(ReplyWithLongLong) && EMQ_API(ReplyWithStringBuffer) && EMQ_API(ReplyWithCallReply) &&
             EMQ_API(StringPtrLen) && EMQ_API(StringToLongLong) && EMQ_API(Call) && EMQ_API(CallReplyType) &&
             EMQ_API(CallReplyInteger) && EMQ_API(CallReplyStringPtr) && EMQ_API(CallReplyLength) &&
             EMQ_API(CallReplyArrayElement);
    if (!ok) return VALKEYMODULE_ERR;
    ValkeyModule_SetModuleAttribs(ctx, name, ver, VALKEYMODULE_APIVER_1);
    return VALKEYMODULE_OK;
}

#endif
