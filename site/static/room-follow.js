// room-follow.js — a page without widgets still follows the visitor's class
// (room.js `followRoom`) on a stream with no widget; a move that would reload
// widgets reloads the page. Dive pages follow the class through lab.js.
import { followRoom } from "./widgets/room.js";

const source = new EventSource("/api/stream?widgets=");
source.addEventListener("room", (e) => followRoom(JSON.parse(e.data), {
  reconnect: () => source.close(),
  reloadAll: () => location.reload(),
}));
// what the page follows now (tools and tests can tell it is listening)
source.onopen = () => { document.body.dataset.followsClass = "open"; };
source.onerror = () => { document.body.dataset.followsClass = "reconnecting"; };
