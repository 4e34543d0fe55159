// room-follow.js — a page without widgets, opened by a member of a class,
// still follows the class: room.js `followRoom` says what each move means
// ("Bring everyone to this page" takes it there); the page has no widget to
// read again, so a move that would reload the widgets reloads the page, and
// the server draws it afresh for what the visitor is in now. It listens on
// the sandbox's stream with no widget: Valkey's status and the class's
// events, never a snapshot. Dive pages follow the class through lab.js.
import { followRoom } from "./widgets/room.js";

const source = new EventSource("/api/stream?widgets=");
source.addEventListener("room", (e) => followRoom(JSON.parse(e.data), {
  reconnect: () => source.close(),
  reloadAll: () => location.reload(),
}));
// what the page follows now (tools and tests can tell it is listening)
source.onopen = () => { document.body.dataset.followsClass = "open"; };
source.onerror = () => { document.body.dataset.followsClass = "reconnecting"; };
