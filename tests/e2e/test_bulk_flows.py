"""Dive 'Bulk flows' in Chromium: the ledger steps a batch of four flows on a real Valkey."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

DIVE = "/batches/bulk-flows"


def ledger(page: Page):
    return page.get_by_role("region", name=re.compile("ledger"))


def flow_row(widget, n: int):
    return widget.locator(f'.ledger-flows [data-flow="{n}"]')


def button(widget, name: str):
    return widget.get_by_role("button", name=name, exact=True)


def test_stepping_the_ledger_shows_each_flows_result_entry_and_parent_state(page: Page) -> None:
    page.goto(DIVE)
    widget = ledger(page)
    result = widget.locator('[data-role="result"]')
    readout = widget.locator('[data-role="readout"]')
    expect(readout).to_contain_text("Before flow 1")
    expect(result).to_contain_text("empty")
    expect(button(widget, "Previous flow")).to_be_disabled()

    button(widget, "Next flow").click()
    expect(result.locator("li")).to_have_text(["(JOB0KHTOWnGLuA, [JOB0KHTOWnGLuB, JOB0KHTOWnGLuC])"])
    expect(flow_row(widget, 1).locator('[data-role="parent-state"]')).to_have_text("awaiting_children")
    expect(flow_row(widget, 1)).to_have_class(re.compile("picked"))

    button(widget, "Next flow").click()
    expect(result.locator("li")).to_have_count(2)
    expect(flow_row(widget, 2)).to_contain_text("(JOB0KHTOWnGLuD, [JOB0KHTOWnGLuE, JOB0KHTOWnGLuF])")

    button(widget, "Next flow").click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("EMQKIND job id must be JOB-namespaced")
    expect(flow_row(widget, 3).locator('[data-role="parent-state"]')).to_have_text("no row")
    expect(flow_row(widget, 3)).to_contain_text("not in the result")
    expect(result.locator("li")).to_have_count(2)

    button(widget, "Next flow").click()
    expect(flow_row(widget, 4).locator('[data-role="parent-state"]')).to_have_text("awaiting_children")
    expect(flow_row(widget, 4)).to_contain_text("JOB0KHTOWnGLuL · pending")
    expect(flow_row(widget, 4)).to_contain_text("TASK0KHTOWnGLuK · no row")
    expect(button(widget, "Next flow")).to_be_disabled()

    button(widget, "Previous flow").click()
    expect(flow_row(widget, 4).locator('[data-role="parent-state"]')).to_have_text("no row")
    expect(widget.locator('[data-role="keys"]')).not_to_contain_text("JOB0KHTOWnGLuJ")


def test_picking_a_flow_after_the_batch_reads_its_entry_or_its_absence(page: Page) -> None:
    page.goto(DIVE)
    widget = ledger(page)
    expect(widget.locator('[data-role="readout"]')).to_contain_text("Before flow 1")
    button(widget, "Run the batch").click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("returned 2 entries")
    button(widget, "Flow 3").click()
    expect(button(widget, "Flow 3")).to_have_attribute("aria-pressed", "true")
    expect(widget.locator('[data-role="picked"]')).to_contain_text("the refused flow wrote nothing")
    button(widget, "Flow 1").click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("in the result: (JOB0KHTOWnGLuA")
    expect(flow_row(widget, 1)).to_have_class(re.compile("picked"))


def test_retrying_flow_four_and_completing_its_children_releases_the_parent(page: Page) -> None:
    page.goto(DIVE)
    widget = ledger(page)
    expect(widget.locator('[data-role="readout"]')).to_contain_text("Before flow 1")
    button(widget, "Run the batch").click()
    expect(flow_row(widget, 4).locator('[data-role="parent-state"]')).to_have_text("awaiting_children")
    button(widget, "Retry flow 4").click()
    expect(flow_row(widget, 4)).to_contain_text("JOB0KHTOWnGLuK · pending")
    button(widget, "Complete the retried children").click()
    expect(flow_row(widget, 4).locator('[data-role="parent-state"]')).to_have_text("pending")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("a second tick delivered 0")


def test_an_ill_formed_id_lands_nothing(page: Page) -> None:
    page.goto(DIVE)
    widget = ledger(page)
    expect(widget.locator('[data-role="readout"]')).to_contain_text("Before flow 1")
    button(widget, "Try an ill-formed id").click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("nothing landed")
    expect(widget.locator('[data-role="keys"]')).to_contain_text("no keys")


def test_reset_rebuilds_the_empty_ledger(page: Page) -> None:
    page.goto(DIVE)
    widget = ledger(page)
    expect(widget.locator('[data-role="readout"]')).to_contain_text("Before flow 1")
    button(widget, "Run the batch").click()
    expect(widget.locator('[data-role="result"] li')).to_have_count(2)
    button(widget, "Reset").click()
    expect(widget.locator('[data-role="readout"]')).to_contain_text("Before flow 1")
    expect(widget.locator('[data-role="result"]')).to_contain_text("empty")


def test_a_ledger_step_link_opens_the_ledger_after_that_flow(page: Page) -> None:
    page.goto(DIVE + "#ledger-step=2")
    widget = ledger(page)
    expect(widget.locator('[data-role="readout"]')).to_contain_text("After flow 2 of 4")
    expect(widget.locator('[data-role="result"] li')).to_have_count(2)


def test_a_bad_custom_batch_is_answered_400_and_the_page_keeps_its_keys(page: Page) -> None:
    page.goto(DIVE)
    widget = ledger(page)
    expect(widget.locator('[data-role="readout"]')).to_contain_text("Before flow 1")
    bad = {"flows": [{"parent": {"id": "JOBx1", "payload": "p"},
                      "children": [{"id": "JOBx2", "payload": "c", "queue": "s9999999999.fanin"}]}]}
    answer = page.request.post("/api/widgets/ledger/custom-batch", data=bad)
    assert answer.status == 400
    # refused at the door: a queue is named relative to the sandbox, never by another's id
    assert "names a sandbox" in answer.json()["error"]
    outside = {"flows": [{"parent": {"id": "JOBx1", "payload": "p"},
                          "children": [{"id": "JOBx2", "payload": "c", "queue": "payments"}]}]}
    answer = page.request.post("/api/widgets/ledger/custom-batch", data=outside)
    assert answer.status == 400
    assert "'queue' must be one of" in answer.json()["error"]
    good = {"flows": [{"parent": {"id": "JOBx1", "payload": "p"},
                       "children": [{"id": "JOBx2", "payload": "c", "queue": "mail"}]}]}
    answer = page.request.post("/api/widgets/ledger/custom-batch", data=good)
    assert answer.status == 200
    assert answer.json()["snapshot"]["picture"]["result"] == [["JOBx1", ["JOBx2"]]]
