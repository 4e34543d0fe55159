"""The console's pure parts, without Valkey: the split, the replies as
valkey-cli prints them, the allowlist and the confinement of keys."""

from __future__ import annotations

import pytest
from redis.exceptions import NoScriptError, ResponseError

from server.console.allow import Refusal, rule_for
from server.console.confine import Confinement
from server.console.parse import Limits, Malformed, split
from server.console.plan import argv_roles, plan, script_shas
from server.emq import registry
from server.valkey import reply

SANDBOX = "s0a1b2c3d4e"
WHERE = Confinement(SANDBOX, frozenset({"fanin", "outbox.orders", "outbox.mail"}))


# -- the split ------------------------------------------------------------------


def test_split_separates_words_by_any_whitespace() -> None:
    assert split("  HGETALL\temq:{fanin}:job:JOBparent  ") == ["HGETALL", "emq:{fanin}:job:JOBparent"]


def test_split_reads_double_quotes_with_escapes_like_valkey_cli() -> None:
    assert split(r'SET k "a b\n\t\"q\"\\ \x41"') == ["SET", "k", 'a b\n\t"q"\\ A']


def test_split_reads_single_quotes_with_only_the_quote_escaped() -> None:
    assert split(r"SET k 'it\'s \n raw'") == ["SET", "k", "it's \\n raw"]


def test_a_quote_may_open_inside_a_word() -> None:
    assert split('SET k a"b c"') == ["SET", "k", "ab c"]


def test_an_empty_quoted_argument_is_an_argument() -> None:
    assert split('HSET k f ""') == ["HSET", "k", "f", ""]


def test_escapes_making_utf8_text_are_accepted() -> None:
    assert split(r'SET k "\xe2\x86\x92"') == ["SET", "k", "→"]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('GET "abc', "unbalanced quotes: the double quote"),
        ("GET 'abc", "unbalanced quotes: the single quote"),
        ('GET "a"b', "must be followed by a space"),
        (r'GET "\xff"', "not UTF-8 text"),
        ("   ", "type a command"),
    ],
)
def test_malformed_lines_are_refused_with_the_reason(line: str, words: str) -> None:
    with pytest.raises(Malformed, match=words):
        split(line)


def test_caps_on_line_arguments_and_argument_size() -> None:
    limits = Limits(line_bytes=100, arguments=3, argument_bytes=10)
    with pytest.raises(Malformed, match="at most 100"):
        split("GET " + "k" * 100, limits)
    with pytest.raises(Malformed, match="more than 3 arguments"):
        split("a b c d", limits)
    with pytest.raises(Malformed, match="argument 2 is 11 bytes"):
        split("GET " + "k" * 11, limits)


def test_a_lone_surrogate_is_refused_not_sent() -> None:
    with pytest.raises(Malformed, match="UTF-8"):
        split("GET \ud800")


# -- replies as valkey-cli prints them ---------------------------------------------


def test_scalars_print_as_valkey_cli_does() -> None:
    assert reply.lines(3) == ["(integer) 3"]
    assert reply.lines(b"3") == ['"3"']
    assert reply.lines(None) == ["(nil)"]
    assert reply.lines(b"OK", status=True) == ["OK"]
    assert reply.lines([]) == ["(empty array)"]


def test_bulk_strings_escape_quotes_controls_and_non_ascii_bytes() -> None:
    assert reply.lines(b'a"b\\c\n') == ['"a\\"b\\\\c\\n"']
    assert reply.lines("→".encode()) == ['"\\xe2\\x86\\x92"']


def test_arrays_number_their_items_and_indent_nested_arrays() -> None:
    assert reply.lines([b"0", [b"a", b"b"]]) == ['1) "0"', '2) 1) "a"', '   2) "b"']


def test_indices_are_right_aligned_to_the_widest() -> None:
    printed = reply.lines([str(i).encode() for i in range(10)])
    assert printed[0] == ' 1) "0"' and printed[9] == '10) "9"'


def test_nested_arrays_under_a_wide_index_indent_past_it() -> None:
    printed = reply.lines([*[b"x"] * 9, [b"a", b"b"]])
    assert printed[-2:] == ['10) 1) "a"', '    2) "b"']


def test_errors_print_with_their_code_as_valkey_sent_it() -> None:
    assert reply.lines(ResponseError("unknown command 'FOO'")) == ["(error) ERR unknown command 'FOO'"]
    assert reply.lines(ResponseError("WRONGTYPE Operation against a key")) == [
        "(error) WRONGTYPE Operation against a key"
    ]
    assert reply.lines(ResponseError("EMQSTALE complete token mismatch")) == [
        "(error) EMQSTALE complete token mismatch"
    ]
    assert reply.lines(NoScriptError("No matching script.")) == ["(error) NOSCRIPT No matching script."]


# -- the allowlist and the confinement ------------------------------------------------


@pytest.mark.parametrize("name", ["FLUSHALL", "flushdb", "CONFIG", "EVAL", "MODULE", "DEBUG", "SHUTDOWN",
                                  "CLIENT", "MONITOR", "SUBSCRIBE", "SCRIPT", "ACL", "SAVE"])
def test_dangerous_commands_are_refused_with_a_reason(name: str) -> None:
    with pytest.raises(Refusal, match="is refused: it"):
        rule_for([name])


def test_an_unlisted_command_is_refused_and_the_list_given() -> None:
    with pytest.raises(Refusal, match=r"not a command the console runs\. It runs: .*HGETALL"):
        rule_for(["GETDEL"])


def test_a_bare_queue_means_that_queue_in_the_sandbox() -> None:
    key = WHERE.key("emq:{fanin}:job:JOBparent", write=True)
    assert key.real == f"emq:{{{SANDBOX}.fanin}}:job:JOBparent"
    assert WHERE.short(key.real) == "emq:{fanin}:job:JOBparent"


def test_the_full_form_is_accepted_for_the_own_sandbox_only() -> None:
    assert WHERE.key(f"emq:{{{SANDBOX}.fanin}}:pending", write=False).queue == "fanin"
    with pytest.raises(Refusal, match="another sandbox"):
        WHERE.key("emq:{szzzzzzzzzz.fanin}:pending", write=False)


@pytest.mark.parametrize("key", ["lab:secret", "lab:sandboxes", "foo", "emq:fanin:pending", "emq:{a}{b}:x"])
def test_keys_outside_the_grammar_are_outside_every_sandbox(key: str) -> None:
    with pytest.raises(Refusal):
        WHERE.key(key, write=False)


def test_writes_reach_the_course_queues_only_and_never_the_outbox() -> None:
    with pytest.raises(Refusal, match="only the course's queues"):
        WHERE.key("emq:{mine}:x", write=True)
    with pytest.raises(Refusal, match="outbox is written by complete and fail"):
        WHERE.key("emq:{outbox.orders}:flow:outbox", write=True, shape="list")
    with pytest.raises(Refusal, match="is a hash in the key grammar"):
        WHERE.key("emq:{fanin}:job:JOBparent", write=True, shape="string")


def test_patterns_are_moved_into_the_sandbox() -> None:
    assert WHERE.pattern("*") == f"emq:{{{SANDBOX}.*"
    assert WHERE.pattern("emq:{fanin}:*") == f"emq:{{{SANDBOX}.fanin}}:*"
    with pytest.raises(Refusal):
        WHERE.pattern("lab:*")
    with pytest.raises(Refusal, match="another sandbox"):
        WHERE.pattern("emq:{szzzzzzzzzz.fanin}:*")


def test_a_row_parent_queue_is_confined_to_the_sandbox() -> None:
    planned = plan("HSET emq:{outbox.mail}:job:JOBx parent_queue outbox.orders", WHERE, Limits())
    assert planned.args[-1] == f"{SANDBOX}.outbox.orders"
    with pytest.raises(Refusal):
        plan("HSET emq:{outbox.mail}:job:JOBx parent_queue elsewhere", WHERE, Limits())


def test_scripts_by_name_keep_every_key_and_base_in_one_queue() -> None:
    planned = plan("claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 30000", WHERE, Limits())
    assert planned.script == "claim" and planned.argv[0] == f"emq:{{{SANDBOX}.fanin}}:"
    with pytest.raises(Refusal, match="shares one"):
        plan("claim 2 emq:{fanin}:pending emq:{outbox.mail}:active emq:{fanin}: 1", WHERE, Limits())
    with pytest.raises(Refusal, match="one script, one hashtag"):
        plan("claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{outbox.mail}: 1", WHERE, Limits())


def test_evalsha_accepts_the_sha_of_a_course_script_only() -> None:
    sha = next(s for s, n in script_shas().items() if n == "claim")
    assert plan(f"EVALSHA {sha} 2 emq:{{fanin}}:pending emq:{{fanin}}:active emq:{{fanin}}: 1", WHERE,
                Limits()).script == "claim"
    with pytest.raises(Refusal, match="course's scripts only"):
        plan("EVALSHA " + "0" * 40 + " 1 emq:{fanin}:x", WHERE, Limits())


def test_the_queue_arguments_of_the_scripts_are_found_in_their_headers() -> None:
    assert argv_roles("claim") == {1: "base"}
    for name in ("complete", "fail", "enqueue_flow_child", "hold_parent"):
        assert "queue" in argv_roles(name).values(), name
    assert set(registry.names()) >= {"claim", "complete", "fail"}


def test_a_long_reply_is_cut_with_a_note_saying_how_much_was_left_out() -> None:
    from server.console.run import REPLY_LINES, cut

    printed = cut([f'{i}) "x"' for i in range(REPLY_LINES + 25)])
    assert len(printed) == REPLY_LINES + 1
    assert printed[-1].startswith("(… 25 more lines not shown")
    assert cut(['1) "a"']) == ['1) "a"']


def test_a_set_with_get_or_a_ping_with_a_message_answers_a_bulk_string() -> None:
    from server.console.run import _bulk_instead

    assert _bulk_instead(["SET", "k", "v", "GET"]) and _bulk_instead(["PING", "hi"])
    assert not _bulk_instead(["SET", "k", "GET"]) and not _bulk_instead(["PING"])


def test_the_stored_transcript_keeps_a_long_reply_short_and_says_so() -> None:
    from server.console.transcript import KEEP_LINES, kept

    entry = kept(
        {"command": "LRANGE k 0 -1", "reply_lines": [f"{i}) x" for i in range(KEEP_LINES + 3)], "kind": "reply"}
    )
    assert len(entry["reply_lines"]) == KEEP_LINES + 1
    assert entry["reply_lines"][-1] == "(… 3 more lines when it ran; run it again to see them)"


def test_an_empty_queue_name_is_quoted_in_its_refusal_not_left_blank() -> None:
    with pytest.raises(Refusal) as caught:
        WHERE.queue("")
    assert str(caught.value).startswith("'' is not a queue name"), str(caught.value)
