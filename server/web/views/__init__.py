"""One view module per page family; each exports `routes()`."""
