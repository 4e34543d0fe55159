"""The Valkey this site runs on: the client it opens and the server it may manage."""
