// room-follow.js — a page without widgets, opened by a member of a class,
// still follows the class: "Bring everyone to this page" takes it there, and
// any other move of the class (a mode change, a close) reloads it, so the
// server draws it afresh for what the visitor is in now. The page opens the
// sandbox's stream with no widget: Valkey's status and the class's events,
// never a snapshot. The dive pages follow the class through lab.js instead.

function open() {
  const source = new EventSource("/api/stream?widgets=");
  source.addEventListener("room", (e) => {
    const event = JSON.parse(e.data);
    if (event.action === "goto") {
      if (event.page && event.page !== location.pathname) location.assign(event.page);
      return;
    }
    source.close();
    location.reload();
  });
  // what the page follows now (tools and tests can tell it is listening)
  source.onopen = () => { document.body.dataset.followsClass = "open"; };
  source.onerror = () => { document.body.dataset.followsClass = "reconnecting"; };
}

open();
