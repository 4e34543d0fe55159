"""HTTP: middleware, request guards, bodies, errors, partials and the views."""
