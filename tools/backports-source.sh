#!/usr/bin/env bash
# Print the apt source line for bookworm-backports, on the Debian mirror this
# machine already uses for bookworm (deb822 .sources files first, then the
# one-line sources.list format). No mirror name is written into the project.
set -euo pipefail
uri=""
for file in /etc/apt/sources.list.d/*.sources; do
  [ -f "$file" ] || continue
  # a stanza whose Suites name bookworm (not -security) gives its URIs
  uri=$(awk '
    /^[[:space:]]*$/ { if (suite && uris) { print uris; exit } suite=0; uris="" ; next }
    /^URIs:/ { sub(/^URIs:[[:space:]]*/, ""); split($0, u, /[[:space:]]+/); uris=u[1] }
    /^Suites:/ { if ($0 ~ /(^|[[:space:]])bookworm([[:space:]]|$)/) suite=1 }
    END { if (suite && uris) print uris }
  ' "$file" | head -n1)
  [ -n "$uri" ] && break
done
if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
  uri=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list)
fi
if [ -z "$uri" ]; then
  echo "no bookworm source found in /etc/apt: add a bookworm-backports line by hand" >&2
  exit 1
fi
echo "deb $uri bookworm-backports main"
