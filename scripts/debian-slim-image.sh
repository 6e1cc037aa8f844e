#!/usr/bin/env bash
# Makes the Dockerfile's base image, debian:12-slim, on a machine that reaches no container
# registry but does reach a Debian mirror: debootstrap --variant=minbase bookworm from the
# mirror apt uses here, trimmed the way the official slim image is (debuerreotype's
# "slimify": no documentation, manual pages or translations, and dpkg told not to install
# them again; apt keeps no package lists or downloaded .debs), then `podman import`ed as
# docker.io/library/debian:12-slim, the name `FROM debian:12-slim` resolves to.
#
#   scripts/debian-slim-image.sh          does nothing if the image exists already
#
# Quiet when it works (one line). Needs root (debootstrap), podman and debootstrap
# (scripts/install-deps.sh with EXO_APT_SET=image). Environment: EXO_DEBIAN_MIRROR (default:
# the first http(s) mirror in /etc/apt/sources.list*, else http://deb.debian.org/debian),
# CONTAINERS_CONF (podman's settings; scripts/image-test.sh sets it).
set -euo pipefail

IMAGE=docker.io/library/debian:12-slim
SUITE=bookworm

log() { printf '[debian-slim] %s\n' "$*" >&2; }

if podman image exists "$IMAGE"; then
    log "$IMAGE exists"
    exit 0
fi
((EUID == 0)) || {
    log "ERROR: debootstrap needs root: run as root"
    exit 1
}

# The first Debian archive URI apt uses (deb822 .sources or one-line .list); not the security
# archive, whose layout differs.
host_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f "$f" ]] || continue
        awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f "$f" ]] || continue
        awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }' "$f"
    done
}
MIRROR="${EXO_DEBIAN_MIRROR:-$(host_mirror | grep -v -- '-security' | head -n 1 || true)}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${MIRROR%/debian}/debian-security"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/exo-debian-slim.XXXXXX")"
trap 'rm -rf -- "$WORK"' EXIT
ROOT="$WORK/rootfs"

started=$SECONDS
if ! debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
    tail -n 40 "$WORK/debootstrap.log" >&2
    log "ERROR: debootstrap from $MIRROR failed (log above): set EXO_DEBIAN_MIRROR to a reachable mirror"
    exit 1
fi

# apt sources as in the official image: the release, its updates and its security fixes.
rm -f "$ROOT/etc/apt/sources.list"
cat >"$ROOT/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

# The official image's dpkg and apt settings (debuerreotype): documentation stays out of later
# installs too, apt throws its downloads away and keeps no translations.
cat >"$ROOT/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
cat >"$ROOT/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
printf 'Acquire::Languages "none";\n' >"$ROOT/etc/apt/apt.conf.d/docker-no-languages"
printf 'Acquire::GzipIndexes "true";\n' >"$ROOT/etc/apt/apt.conf.d/docker-gzip-indexes"
printf 'Apt::AutoRemove::SuggestsImportant "false";\n' >"$ROOT/etc/apt/apt.conf.d/docker-autoremove-suggests"

# What the settings above would have kept out, removed now (copyrights kept).
find "$ROOT/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$ROOT/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$ROOT"/usr/share/{man,groff,info,lintian,linda}/* "$ROOT"/var/cache/apt/*.bin \
    "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/log/*.log \
    "$ROOT"/var/log/apt/* "$ROOT"/tmp/* "$ROOT"/root/.bash_history
find "$ROOT/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
# A container gets its hostname, hosts and resolv.conf from its runtime.
rm -f "$ROOT/etc/hostname" "$ROOT/etc/resolv.conf"
: >"$ROOT/etc/machine-id"

tar --numeric-owner -C "$ROOT" -cf "$WORK/rootfs.tar" .
podman import --quiet --change 'CMD ["bash"]' "$WORK/rootfs.tar" "$IMAGE" >/dev/null
log "made $IMAGE from $MIRROR in $((SECONDS - started)) s ($(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
