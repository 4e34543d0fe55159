"""Issue 28, item 6, as a guesser tries it on `emqlab serve`: 300 wrong
instructor tokens and then the right one from one address, by the form and
by `Authorization: Bearer`, while a second address signs in and an
instructor already signed in behind the guesser's address keeps working;
and a 12-character token at start."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench.reliability_drive import TOKEN, Mode, Row, client, counted, instructor, said, status_of
from bench.reliability_procs import Serve, scratch
from server.web.rates import attempts_key

GUESSES = 300
THREADS = 16
LIMIT = 20  # the site's default failed attempts per visitor per minute (EMQLAB_ATTEMPT_LIMIT)


def fresh_minute(margin: float) -> None:
    """Failed attempts are counted per wall-clock minute: a burst must not straddle two."""
    left = 60 - time.time() % 60
    if left < margin:
        time.sleep(left + 0.1)


def burst(calls: list[Callable[[], httpx.Response]]) -> tuple[list[int], float]:
    """Make the calls THREADS at a time: (their statuses in order, calls per second)."""
    started = time.monotonic()
    with ThreadPoolExecutor(THREADS) as pool:
        codes = list(pool.map(status_of, calls))
    return codes, round(len(calls) / (time.monotonic() - started), 1)


def guess(via: httpx.Client, n: int) -> Callable[[], httpx.Response]:
    return lambda: via.post("/instructor/sign-in", data={"token": f"guess-{n:04d}-of-sixteen"})


def bearer_guess(via: httpx.Client, n: int) -> Callable[[], httpx.Response]:
    return lambda: via.get("/instructor/overview", headers={"Authorization": f"Bearer guess-{n:04d}-of-sixteen"})


def guessing(mode: Mode) -> list[Row]:
    work = scratch("tokens")
    rows = []
    with Serve(work, env={"EMQLAB_ATTEMPT_LIMIT": str(LIMIT)}) as site:
        r = site.redis()
        # an instructor signed in before, behind the same NAT address as the guesser
        teacher, signed = instructor(site.url, address="127.0.0.2")
        limits = httpx.Limits(max_connections=THREADS)
        guesser = client(site.url, "127.0.0.2", limits=limits)
        bearer = client(site.url, "127.0.0.4", limits=limits)
        fresh_minute(15)
        # a second address signs in halfway through the burst, among the guesses
        calls = [guess(guesser, n) for n in range(GUESSES)]
        calls.insert(GUESSES // 2, lambda: instructor(site.url, address="127.0.0.3")[0].get("/instructor/overview"))
        codes, rate = burst(calls)
        second, form = codes.pop(GUESSES // 2), codes
        right = guesser.post("/instructor/sign-in", data={"token": TOKEN}, headers={"Accept": "application/json"})
        counter = int(r.get(attempts_key("sign-in", "a:127.0.0.2")) or 0)  # the address's count
        rows += [
            Row("the instructor signs in by the form from 127.0.0.2 (before any guess)", str(signed), None,
                None, "", signed == 303),
            Row(f"{GUESSES} wrong tokens by the form from 127.0.0.2, {THREADS} at a time",
                counted(form), None, None,
                f"tokens compared: {form.count(401)} (each 401 is one compare); {rate} guesses a second; "
                f"attempts counted against the address in Valkey: {counter}",
                form.count(401) <= LIMIT and 0 not in form),
            Row("halfway through, 127.0.0.3 signs in with the right token and opens the overview", str(second),
                None, None, "", second == 200),
            Row("then the right token by the form from 127.0.0.2", str(right.status_code), None, None,
                said(right), right.status_code == 429),
        ]
        fresh_minute(15)
        codes, rate = burst([bearer_guess(bearer, n) for n in range(GUESSES)])
        right_bearer = bearer.get("/instructor/overview", headers={"Authorization": f"Bearer {TOKEN}"})
        still = teacher.get("/instructor/overview").status_code
        room = teacher.post("/instructor/rooms", json={"name": "After the guessing"}).status_code
        rows += [
            Row(f"{GUESSES} wrong tokens by `Authorization: Bearer` from 127.0.0.4, {THREADS} at a time, "
                "then the right one", counted([*codes, right_bearer.status_code]), None, None,
                f"tokens compared: {codes.count(401)}; {rate} guesses a second; the right one: "
                f"{right_bearer.status_code}", codes.count(401) <= LIMIT and right_bearer.status_code == 429),
            Row("the instructor signed in at 127.0.0.2: the overview, then a new class", counted([still, room]),
                None, None, "its cookie is not a guess: no token is compared", still == 200 and room == 201),
        ]
    rows.append(short_token(work))
    return rows


def short_token(work: Path) -> Row:
    """A 12-character EMQLAB_INSTRUCTOR_TOKEN: the site must not start."""
    site = Serve(work / "short", env={"EMQLAB_INSTRUCTOR_TOKEN": "twelve-chars"})
    started = time.monotonic()
    proc = site.launch()
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:  # still running: the token was taken, which is what this row says
        site.stop()
        code = None
    seconds = round(time.monotonic() - started, 2)
    words = site.said().strip().splitlines()
    valkey = (site.data_dir / "valkey").exists()
    return Row("`emqlab serve` with EMQLAB_INSTRUCTOR_TOKEN=twelve-chars (12 characters)",
               f"exit {code}" if code is not None else "still running", seconds, None,
               f"said: {words[-1][:150] if words else '(nothing)'}; a valkey-server folder made: {valkey}",
               code not in (None, 0) and "16" in (words[-1] if words else ""))
