/*
 * emq_module.c: EMQ.COMPLETE and EMQ.FAIL, EchoMQ's native executor.
 *
 * The native commands run the FLAT transitions of complete.lua and fail.lua
 * with the same keys, the same effects and the same replies. Flows are a
 * script-only shape: a flow layout (the key counts complete and fail send
 * for a flow child) is refused straight after numkeys, and the flat form on
 * a row that carries `parent` is refused after the row's token check. Every
 * refusal, and every shape check, comes before the first write.
 *
 *   EMQ.COMPLETE 2 <active> <row> <id> <token> <base>
 *     -> 0 (no row) | 1 | -EMQSTALE complete token mismatch
 *   EMQ.FAIL 4 <active> <row> <schedule> <dead> <id> <token> <error> <max_attempts> <backoff_ms> <base>
 *     -> 0 (no row) | "scheduled" | "dead" | -EMQSTALE fail token mismatch
 *   numkeys 5 or 3 (complete), 8 or 5 (fail): -EMQSTATE <verb> flow not native
 *   a base other than emq:{<the keys' hashtag>}: -> -ERR the base must be ...
 *   EMQ.FAIL's schedule or dead not <base>schedule, <base>dead -> -ERR EMQ.FAIL adds to ...
 *   a key or a command the caller's ACL denies -> -NOPERM ... (Valkey's words)
 *
 * Keys go through Call, one server command at a time; writes carry '!' so
 * replicas and the AOF see exactly the effects (fail reads TIME, so the
 * command itself must not be replayed).
 *
 * Every Call runs as the caller ('C'): a sandbox's Valkey ACL user reaches
 * only its own keys through the module too, and a key it may not touch
 * answers Valkey's own NOPERM ('E' hands that error back as a reply). The
 * base is not a declared key (the server checked the declared ones before
 * the command ran), so it must read emq:{<the keys' hashtag>}: exactly, and
 * every write is first tried dry ('D') so that a refusal comes before the
 * first write, never between two.
 */
#include <string.h>

#include "valkey_module_api.h"

#define COMPLETE_FLAT_KEYS 2
#define COMPLETE_ARGS 3 /* id token base */
#define FAIL_FLAT_KEYS 4
#define FAIL_ARGS 6 /* id token error max_attempts backoff_ms base */

/* ---- small readers -------------------------------------------------------- */

/* The cluster hashtag of a name: what lies between the first '{' and the
 * first '}' after it, when that is not empty; else the whole name. */
static void hashtag(const char *s, size_t len, const char **tag, size_t *taglen) {
    const char *open = memchr(s, '{', len);
    if (open) {
        const char *close = memchr(open + 1, '}', len - (size_t)(open + 1 - s));
        if (close && close > open + 1) {
            *tag = open + 1;
            *taglen = (size_t)(close - open - 1);
            return;
        }
    }
    *tag = s;
    *taglen = len;
}

/* Every key and the base share the first key's hashtag (one slot), the way
 * every key one script touches must; the base builds the metrics key. */
static int one_slot(ValkeyModuleString **names, int count) {
    size_t len, firstlen;
    const char *first, *tag, *s = ValkeyModule_StringPtrLen(names[0], &len);
    hashtag(s, len, &first, &firstlen);
    for (int i = 1; i < count; i++) {
        size_t taglen;
        s = ValkeyModule_StringPtrLen(names[i], &len);
        hashtag(s, len, &tag, &taglen);
        if (taglen != firstlen || memcmp(tag, first, taglen) != 0) return 0;
    }
    return 1;
}

/* The base builds the metrics key (`base .. 'metrics:completed'` in the
 * script), a key the server never saw among the declared ones: it must be
 * emq:{<tag>}: exactly, <tag> a non-empty hashtag with no brace in it, so
 * the key it builds is in the key grammar (and one_slot then holds it to
 * the keys' own hashtag). A base such as LLL{q}: is refused. */
static int base_ok(ValkeyModuleString *base) {
    size_t len;
    const char *s = ValkeyModule_StringPtrLen(base, &len);
    static const char head[] = "emq:{";
    size_t headlen = sizeof(head) - 1;
    if (len < headlen + 3 || memcmp(s, head, headlen) != 0 || s[len - 2] != '}' || s[len - 1] != ':') return 0;
    for (size_t i = headlen; i < len - 2; i++)
        if (s[i] == '{' || s[i] == '}') return 0;
    return 1;
}

#define BASE_REFUSAL "ERR the base must be emq:{<hashtag>}: with the keys' own {hashtag}"


/* A key is of `want` type or absent: checked before any write, so no write
 * fails halfway with WRONGTYPE and leaves the others done. TYPE runs as the
 * caller: a key outside the caller's ACL answers NOPERM here, through
 * `denied`, before anything is written. */
enum check { CHECK_OK, CHECK_WRONGTYPE, CHECK_DENIED };

static enum check type_ok(ValkeyModuleCtx *ctx, const char *key, size_t keylen, const char *want,
                          ValkeyModuleCallReply **denied) {
    ValkeyModuleCallReply *r = ValkeyModule_Call(ctx, "TYPE", "CEb", key, keylen);
    if (r && ValkeyModule_CallReplyType(r) == VALKEYMODULE_REPLY_ERROR) return *denied = r, CHECK_DENIED;
    size_t len;
    const char *t = r ? ValkeyModule_CallReplyStringPtr(r, &len) : NULL;
    if (!t) return CHECK_WRONGTYPE;
    int ok = (len == 4 && memcmp(t, "none", 4) == 0) || (len == strlen(want) && memcmp(t, want, len) == 0);
    return ok ? CHECK_OK : CHECK_WRONGTYPE;
}

static enum check key_type_ok(ValkeyModuleCtx *ctx, ValkeyModuleString *key, const char *want,
                              ValkeyModuleCallReply **denied) {
    size_t len;
    const char *s = ValkeyModule_StringPtrLen(key, &len);
    return type_ok(ctx, s, len, want, denied);
}

/* The checks of a list of keys, in order: the first that fails decides. */
static enum check all_ok(enum check *found, int count) {
    for (int i = 0; i < count; i++)
        if (found[i] != CHECK_OK) return found[i];
    return CHECK_OK;
}

/* A dry run of one write as the caller ('D': checked, not executed): NULL
 * when it would run, else the error it would answer (NOPERM ...). */
static ValkeyModuleCallReply *refusal_of(ValkeyModuleCallReply *dry) {
    return dry && ValkeyModule_CallReplyType(dry) == VALKEYMODULE_REPLY_ERROR ? dry : NULL;
}

/* base + suffix into buf (the script's `base .. 'metrics:completed'`);
 * its length, or 0 when it does not fit. */
static size_t queue_key(ValkeyModuleString *base, const char *suffix, char *buf, size_t cap) {
    size_t len, slen = strlen(suffix);
    const char *b = ValkeyModule_StringPtrLen(base, &len);
    if (len + slen + 1 > cap) return 0;
    memcpy(buf, b, len);
    memcpy(buf + len, suffix, slen + 1);
    return len + slen;
}

/* A key is base + suffix exactly (emq:{q}:schedule): a set the command adds
 * to is then a key the grammar makes a sorted set, so no call turns a key of
 * another type in the grammar (a row, a counter, the outbox) into one. */
static int named(ValkeyModuleString *key, ValkeyModuleString *base, const char *suffix) {
    char want[512];
    size_t len, want_len = queue_key(base, suffix, want, sizeof(want));
    const char *s = ValkeyModule_StringPtrLen(key, &len);
    return want_len && len == want_len && memcmp(s, want, len) == 0;
}

/* The server's clock in ms, from TIME (seconds, microseconds), read as the
 * caller; -1 when TIME answered an error (in *denied, to be replied). */
static long long now_ms(ValkeyModuleCtx *ctx, ValkeyModuleCallReply **denied) {
    ValkeyModuleCallReply *r = ValkeyModule_Call(ctx, "TIME", "CE");
    if (!r || ValkeyModule_CallReplyType(r) != VALKEYMODULE_REPLY_ARRAY) return *denied = r, -1;
    long long part[2] = {0, 0};
    for (size_t i = 0; i < 2 && i < ValkeyModule_CallReplyLength(r); i++) {
        size_t len;
        const char *s = ValkeyModule_CallReplyStringPtr(ValkeyModule_CallReplyArrayElement(r, i), &len);
        for (size_t j = 0; s && j < len && s[j] >= '0' && s[j] <= '9'; j++) part[i] = part[i] * 10 + (s[j] - '0');
    }
    return part[0] * 1000 + part[1] / 1000;
}

/* Reply with a Call's error when there is one (an ACL refusal), else with
 * `fallback`: the module's own words for a reply it could not read. */
static int reply_failed(ValkeyModuleCtx *ctx, ValkeyModuleCallReply *r, const char *fallback) {
    if (r && ValkeyModule_CallReplyType(r) == VALKEYMODULE_REPLY_ERROR) return ValkeyModule_ReplyWithCallReply(ctx, r);
    return ValkeyModule_ReplyWithError(ctx, fallback);
}

/* ---- the gate both commands share ------------------------------------------ */

/* What one verb answers when it refuses: the script's words, exactly. */
struct verb {
    const char *stale; /* the token is not the row's attempts */
    const char *flow;  /* a flow layout, or a row that carries `parent` */
};

static const struct verb COMPLETE = {"EMQSTALE complete token mismatch", "EMQSTATE complete flow not native"};
static const struct verb FAIL = {"EMQSTALE fail token mismatch", "EMQSTATE fail flow not native"};

enum gate { GATE_PASS, GATE_REPLIED };

/* Read the row as the script does, before anything is written: a missing
 * row answers 0, a token that is not its attempts answers EMQSTALE, and a
 * row that carries `parent` is a flow child, refused. On GATE_PASS with
 * `attempts` given, it holds the row's attempts as a number. */
static enum gate read_row(ValkeyModuleCtx *ctx, ValkeyModuleString *row, ValkeyModuleString *token,
                          const struct verb *verb, long long *attempts) {
    ValkeyModuleCallReply *r = ValkeyModule_Call(ctx, "HGET", "CEsc", row, "attempts");
    if (!r) return ValkeyModule_ReplyWithError(ctx, "ERR could not read the job row"), GATE_REPLIED;
    int type = ValkeyModule_CallReplyType(r);
    if (type == VALKEYMODULE_REPLY_ERROR) return ValkeyModule_ReplyWithCallReply(ctx, r), GATE_REPLIED;
    if (type == VALKEYMODULE_REPLY_NULL) return ValkeyModule_ReplyWithLongLong(ctx, 0), GATE_REPLIED;
    size_t have_len, want_len;
    const char *have = ValkeyModule_CallReplyStringPtr(r, &have_len);
    const char *want = ValkeyModule_StringPtrLen(token, &want_len);
    if (have_len != want_len || memcmp(have, want, have_len) != 0)
        return ValkeyModule_ReplyWithError(ctx, verb->stale), GATE_REPLIED;
    ValkeyModuleCallReply *p = ValkeyModule_Call(ctx, "HEXISTS", "CEsc", row, "parent");
    if (!p || ValkeyModule_CallReplyType(p) != VALKEYMODULE_REPLY_INTEGER)
        return reply_failed(ctx, p, "ERR could not read the job row"), GATE_REPLIED;
    if (ValkeyModule_CallReplyInteger(p) == 1) return ValkeyModule_ReplyWithError(ctx, verb->flow), GATE_REPLIED;
    /* The token matched, so it is the attempts value; fail compares it. */
    if (attempts && ValkeyModule_StringToLongLong(token, attempts) != VALKEYMODULE_OK)
        return ValkeyModule_ReplyWithError(ctx, "ERR the row's attempts is not a whole number"), GATE_REPLIED;
    return GATE_PASS;
}

/* With "getkeys-api" the server asks where the keys are (ACL, cluster
 * routing, COMMAND GETKEYS): argv[2 .. 2+numkeys-1], as for EVAL. */
static int report_keys(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc) {
    long long numkeys = 0;
    if (argc >= 2 && ValkeyModule_StringToLongLong(argv[1], &numkeys) == VALKEYMODULE_OK)
        for (long long i = 0; i < numkeys && 2 + i < argc; i++) ValkeyModule_KeyAtPos(ctx, (int)(2 + i));
    return VALKEYMODULE_OK;
}

/* numkeys, read first: ERR when it is not a whole number. */
static int numkeys_of(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc, long long *numkeys) {
    if (argc < 2) return ValkeyModule_WrongArity(ctx), 0;
    if (ValkeyModule_StringToLongLong(argv[1], numkeys) != VALKEYMODULE_OK)
        return ValkeyModule_ReplyWithError(ctx, "ERR numkeys must be a whole number"), 0;
    return 1;
}

/* ---- EMQ.COMPLETE ---------------------------------------------------------- */

static int complete_command(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc) {
    if (ValkeyModule_IsKeysPositionRequest(ctx)) return report_keys(ctx, argv, argc);
    ValkeyModule_AutoMemory(ctx);
    long long numkeys;
    if (!numkeys_of(ctx, argv, argc, &numkeys)) return VALKEYMODULE_OK;
    /* The same-queue (5) and cross-queue (3) flow layouts: refused here,
     * before the shape check, the fence and any read. */
    if (numkeys == 5 || numkeys == 3) return ValkeyModule_ReplyWithError(ctx, COMPLETE.flow);
    if (numkeys != COMPLETE_FLAT_KEYS)
        return ValkeyModule_ReplyWithError(ctx, "ERR EMQ.COMPLETE takes numkeys 2 (active, row), then id token base");
    if (argc != 2 + COMPLETE_FLAT_KEYS + COMPLETE_ARGS) return ValkeyModule_WrongArity(ctx);
    ValkeyModuleString *active = argv[2], *row = argv[3], *id = argv[4], *token = argv[5], *base = argv[6];
    ValkeyModuleString *names[] = {active, row, base};
    char metrics[512];
    size_t metrics_len = queue_key(base, "metrics:completed", metrics, sizeof(metrics));
    if (!metrics_len || !base_ok(base) || !one_slot(names, 3)) return ValkeyModule_ReplyWithError(ctx, BASE_REFUSAL);
    ValkeyModuleCallReply *denied = NULL;
    enum check found[] = {key_type_ok(ctx, active, "zset", &denied), type_ok(ctx, metrics, metrics_len, "hash", &denied)};
    if (all_ok(found, 2) == CHECK_DENIED) return ValkeyModule_ReplyWithCallReply(ctx, denied);
    if (all_ok(found, 2) == CHECK_WRONGTYPE)
        return ValkeyModule_ReplyWithError(ctx, "WRONGTYPE active must be a sorted set and metrics:completed a hash");
    if (read_row(ctx, row, token, &COMPLETE, NULL) == GATE_REPLIED) return VALKEYMODULE_OK;

    /* complete.lua's flat arm: out of active, the row retires, the metric
     * counts. Each write tried dry first: a refusal leaves nothing written. */
    ValkeyModuleCallReply *no;
    if ((no = refusal_of(ValkeyModule_Call(ctx, "ZREM", "DCEss", active, id))) ||
        (no = refusal_of(ValkeyModule_Call(ctx, "DEL", "DCEs", row))) ||
        (no = refusal_of(ValkeyModule_Call(ctx, "HINCRBY", "DCEbcl", metrics, metrics_len, "count", 1LL))))
        return ValkeyModule_ReplyWithCallReply(ctx, no);
    ValkeyModule_Call(ctx, "ZREM", "!CEss", active, id);
    ValkeyModule_Call(ctx, "DEL", "!CEs", row);
    ValkeyModule_Call(ctx, "HINCRBY", "!CEbcl", metrics, metrics_len, "count", 1LL);
    return ValkeyModule_ReplyWithLongLong(ctx, 1);
}

/* ---- EMQ.FAIL -------------------------------------------------------------- */

static int fail_command(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc) {
    if (ValkeyModule_IsKeysPositionRequest(ctx)) return report_keys(ctx, argv, argc);
    ValkeyModule_AutoMemory(ctx);
    long long numkeys;
    if (!numkeys_of(ctx, argv, argc, &numkeys)) return VALKEYMODULE_OK;
    /* The same-queue (8) and cross-queue (5) failure layouts. */
    if (numkeys == 8 || numkeys == 5) return ValkeyModule_ReplyWithError(ctx, FAIL.flow);
    if (numkeys != FAIL_FLAT_KEYS)
        return ValkeyModule_ReplyWithError(
            ctx, "ERR EMQ.FAIL takes numkeys 4 (active, row, schedule, dead), then id token error max_attempts backoff_ms base");
    if (argc != 2 + FAIL_FLAT_KEYS + FAIL_ARGS) return ValkeyModule_WrongArity(ctx);
    ValkeyModuleString *active = argv[2], *row = argv[3], *schedule = argv[4], *dead = argv[5];
    ValkeyModuleString *id = argv[6], *token = argv[7], *error = argv[8], *base = argv[11];
    long long max_attempts, backoff_ms;
    if (ValkeyModule_StringToLongLong(argv[9], &max_attempts) != VALKEYMODULE_OK ||
        ValkeyModule_StringToLongLong(argv[10], &backoff_ms) != VALKEYMODULE_OK)
        return ValkeyModule_ReplyWithError(ctx, "ERR max_attempts and backoff_ms must be whole numbers");
    ValkeyModuleString *names[] = {active, row, schedule, dead, base};
    if (!base_ok(base) || !one_slot(names, 5)) return ValkeyModule_ReplyWithError(ctx, BASE_REFUSAL);
    if (!named(schedule, base, "schedule") || !named(dead, base, "dead"))
        return ValkeyModule_ReplyWithError(ctx, "ERR EMQ.FAIL adds to the queue's own sets: schedule and dead must be "
                                                "<base>schedule and <base>dead");
    ValkeyModuleCallReply *denied = NULL;
    enum check found[] = {key_type_ok(ctx, active, "zset", &denied), key_type_ok(ctx, schedule, "zset", &denied),
                          key_type_ok(ctx, dead, "zset", &denied)};
    if (all_ok(found, 3) == CHECK_DENIED) return ValkeyModule_ReplyWithCallReply(ctx, denied);
    if (all_ok(found, 3) == CHECK_WRONGTYPE)
        return ValkeyModule_ReplyWithError(ctx, "WRONGTYPE active, schedule and dead must be sorted sets");
    long long attempts;
    if (read_row(ctx, row, token, &FAIL, &attempts) == GATE_REPLIED) return VALKEYMODULE_OK;
    long long now = now_ms(ctx, &denied);
    if (now < 0) return reply_failed(ctx, denied, "ERR could not read the server's clock");

    /* fail.lua's flat arm: out of active; below the cap into schedule after
     * the backoff, at the cap into dead; the row says which and why. Each
     * write tried dry first: a refusal leaves nothing written. */
    int retry = attempts < max_attempts;
    const char *state = retry ? "scheduled" : "dead";
    ValkeyModuleString *into = retry ? schedule : dead;
    long long score = retry ? now + backoff_ms : now;
    ValkeyModuleCallReply *no;
    if ((no = refusal_of(ValkeyModule_Call(ctx, "ZREM", "DCEss", active, id))) ||
        (no = refusal_of(ValkeyModule_Call(ctx, "ZADD", "DCEsls", into, score, id))) ||
        (no = refusal_of(ValkeyModule_Call(ctx, "HSET", "DCEscccs", row, "state", state, "last_error", error))))
        return ValkeyModule_ReplyWithCallReply(ctx, no);
    ValkeyModule_Call(ctx, "ZREM", "!CEss", active, id);
    ValkeyModule_Call(ctx, "ZADD", "!CEsls", into, score, id);
    ValkeyModule_Call(ctx, "HSET", "!CEscccs", row, "state", state, "last_error", error);
    return ValkeyModule_ReplyWithStringBuffer(ctx, state, strlen(state));
}

/* ---- loading --------------------------------------------------------------- */

/* "write": refused on a replica; "deny-oom": refused over maxmemory before it
 * runs; "getkeys-api": the keys follow numkeys, as for EVAL. */
#define EMQ_FLAGS "write deny-oom getkeys-api"

int ValkeyModule_OnLoad(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    if (emq_api_init(ctx, "emq", 1) != VALKEYMODULE_OK) return VALKEYMODULE_ERR;
    if (ValkeyModule_CreateCommand(ctx, "emq.complete", complete_command, EMQ_FLAGS, 0, 0, 0) != VALKEYMODULE_OK)
        return VALKEYMODULE_ERR;
    if (ValkeyModule_CreateCommand(ctx, "emq.fail", fail_command, EMQ_FLAGS, 0, 0, 0) != VALKEYMODULE_OK)
        return VALKEYMODULE_ERR;
    return VALKEYMODULE_OK;
}

/* A Redis OSS server looks for this name instead; Valkey tries its own first. */
int RedisModule_OnLoad(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc) {
    return ValkeyModule_OnLoad(ctx, argv, argc);
}
