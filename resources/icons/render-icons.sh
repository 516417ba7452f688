#!/usr/bin/env bash
# Renders lorascope.svg into the hicolor PNG sizes committed next to it (hicolor/<N>x<N>/lorascope.png).
# Run after editing the SVG; needs rsvg-convert (Debian: librsvg2-bin). The build does not run this,
# so building and packaging need no SVG renderer.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v rsvg-convert >/dev/null || { echo "render-icons.sh: rsvg-convert not found (apt-get install librsvg2-bin)" >&2; exit 1; }
for size in 16 32 48 64 128 256; do
  mkdir -p "$here/hicolor/${size}x${size}"
  rsvg-convert --width "$size" --height "$size" --format png \
    --output "$here/hicolor/${size}x${size}/lorascope.png" "$here/lorascope.svg"
done
echo "rendered: $(cd "$here" && ls hicolor/*/lorascope.png | tr '\n' ' ')"
