# scripts/crates.sh - fetching C sources that crates bundle, shared by
# scripts/build-peers.sh (the peers it builds) and scripts/hardened-tests.sh
# (hardened_malloc's own tests).  Sourced, not run; needs cargo and python3.

# fetch_crates DIR DEPENDENCY...: fetches the crates' sources into cargo's
# registry through a throwaway Cargo project in DIR (each DEPENDENCY a line
# of its [dependencies]), and their metadata into DIR/metadata.json.
fetch_crates() {
	local proj=$1
	shift
	mkdir -p "$proj/src" || return 1
	: >"$proj/src/lib.rs"
	cat >"$proj/Cargo.toml" <<CARGO
[package]
name = "tlmalloc-crate-sources"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$(printf '%s\n' "$@")
CARGO
	(cd "$proj" && cargo fetch --quiet) || return 1
	(cd "$proj" && cargo metadata --format-version 1 --quiet) \
		>"$proj/metadata.json" || return 1
}

# crate_dir DIR NAME: the folder of the crate NAME that fetch_crates DIR
# fetched.
crate_dir() {
	python3 - "$1/metadata.json" "$2" <<'PY'
import json, os, sys
with open(sys.argv[1]) as handle:
    meta = json.load(handle)
for package in meta["packages"]:
    if package["name"] == sys.argv[2]:
        print(os.path.dirname(package["manifest_path"]))
        break
else:
    sys.exit(1)
PY
}
