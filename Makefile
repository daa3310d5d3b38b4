# SwiftRTC — every target installs what it needs on a fresh Debian 12 machine and is idempotent.
SHELL := /bin/bash
APT_PACKAGES := libssl-dev libsrtp2-dev libusrsctp-dev pkg-config chromium iproute2 util-linux \
  libyuv-dev libopenh264-dev libvpx-dev libopus-dev libavformat-dev libavcodec-dev libavutil-dev libswscale-dev \
  libwebrtc-audio-processing-dev libspeexdsp-dev libsdl2-dev zlib1g-dev libjpeg62-turbo-dev linux-libc-dev \
  xvfb x11-apps imagemagick coturn nftables libpulse-dev pulseaudio pulseaudio-utils \
  libopencv-objdetect-dev opencv-data python-matplotlib-data ffmpeg
VENV := .venv
PY := $(VENV)/bin/python
SWIFT_BUILD := swift build
FUZZ_SECONDS ?= 30
BIN := .build/debug/swiftrtc

.PHONY: all deps venv build demo echo test unit tsan interop fuzz bench clean

all: build

# Debian packages: only runs apt-get when something is missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; apt-get update -q && apt-get install -y -q $$missing; \
	fi

# Python test peers: aiortc (PyPI) and pytest in a venv.
venv: $(VENV)/.ok
$(VENV)/.ok:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q aiortc pytest numpy
	touch $@

build: deps
	$(SWIFT_BUILD)

# The main job: the embedded relay on loopback, the test pattern published and played back,
# verified frame by frame; writes artifacts/demo/snapshot.png and stats.json.
demo: build
	$(BIN) demo
	$(BIN) demo --camera --out artifacts/demo/camera

# Everything CI checks: unit tests (plain and under ThreadSanitizer), interop with Chromium and
# aiortc, bounded fuzzing.
test: deps venv
	$(MAKE) unit
	$(MAKE) tsan
	$(MAKE) interop
	$(MAKE) fuzz

# Serial: HTTP tests await handlers on the 2-thread cooperative pool, which CPU-heavy codec
# tests running in parallel would starve.
unit: deps
	swift build --build-tests
	swift test --skip-build --no-parallel

# The unit tests under ThreadSanitizer, in a build directory of their own (the first build is a
# full one; only the test bundle and what it needs, not the CLI, bench or fuzz tools). Any
# report fails the run. Shared state must be behind Locks' Locked or atomics:
# TSan cannot see Synchronization's Mutex hand over a contended lock, and reports it as a race.
tsan: deps
	swift build --product SwiftRTCPackageTests --sanitize=thread --scratch-path .build/tsan
	@mkdir -p artifacts
	@# CI shows only the log's tail: the reports' summaries, and the first reports with the
	@# test each came in, are printed again at the end (all of it in artifacts/tsan.log).
	@set -o pipefail; swift test --skip-build --sanitize=thread --scratch-path .build/tsan --no-parallel \
	  $(foreach t,$(TSAN_SKIP),--skip '$(t)') 2>&1 | tee artifacts/tsan.log; status=$$?; \
	if grep -q "WARNING: ThreadSanitizer" artifacts/tsan.log; then \
	  echo "== ThreadSanitizer reports (whole log: artifacts/tsan.log)"; \
	  grep "^SUMMARY: ThreadSanitizer" artifacts/tsan.log | sort | uniq -c; \
	  awk '/^(◇ Test|Test Case).*started/ { test = $$0 } \
	       /WARNING: ThreadSanitizer/ { n++; if (n <= 3) { print "-- in: " test; show = 1 } } \
	       show { print } /^SUMMARY: ThreadSanitizer/ { show = 0 }' artifacts/tsan.log | head -300; \
	fi; exit $$status

# Interop suite in a private network namespace with only loopback.
interop: deps venv build
	bash interop/run.sh

fuzz: deps
	swift build --product swiftrtc-fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING --scratch-path .build/fuzz
	@mkdir -p artifacts/fuzz .build/fuzz-corpus/jpeg
	@# JPEG seeds (made here, not committed): colour 4:2:0, 4:2:2 progressive, greyscale.
	@convert -size 48x32 gradient:red-blue -quality 80 .build/fuzz-corpus/jpeg/seed420.jpg
	@convert -size 40x24 gradient:green-yellow -sampling-factor 2x1 -interlace JPEG .build/fuzz-corpus/jpeg/seed422p.jpg
	@convert -size 32x32 gradient: -colorspace Gray .build/fuzz-corpus/jpeg/seedgray.jpg
	@for t in sdp sdpfrag stun rtp rtcp http jpeg websocket dcep turn mux netlink videopayload; do \
	  echo "fuzz $$t for $(FUZZ_SECONDS) s"; \
	  mkdir -p .build/fuzz-corpus/$$t; \
	  SWIFTRTC_FUZZ_TARGET=$$t .build/fuzz/debug/swiftrtc-fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	    -artifact_prefix=artifacts/fuzz/$$t- .build/fuzz-corpus/$$t 2>artifacts/fuzz/$$t.log \
	    || { tail -40 artifacts/fuzz/$$t.log; exit 1; }; \
	  grep -E "^(#[0-9]+\s+DONE|Done)" artifacts/fuzz/$$t.log | tail -1; \
	done

# Release builds of the bench and of the CLI its relay phase runs (`swiftrtc serve/publish/play`).
bench: deps venv
	swift build -c release -Xswiftc -cross-module-optimization --product swiftrtc-bench
	swift build -c release -Xswiftc -cross-module-optimization --product swiftrtc
	@mkdir -p artifacts
	.build/release/swiftrtc-bench --python $(PY) --aiortc-script bench/aiortc_connect.py \
	  --aiortc-publish-script bench/aiortc_publish.py --swiftrtc .build/release/swiftrtc --json artifacts/bench.json
	unshare --net bash -c 'ip link set lo up && exec $(PY) bench/network_bench.py --swiftrtc .build/release/swiftrtc --json artifacts/bench-network.json'
	unshare --net bash -c 'ip link set lo up && exec $(PY) bench/p2p_bench.py --swiftrtc .build/release/swiftrtc --json artifacts/bench-p2p.json'
	unshare --net bash -c 'ip link set lo up && exec $(PY) bench/audio_latency.py --swiftrtc .build/release/swiftrtc --json artifacts/bench-audio-latency.json'
	unshare --net bash -c 'ip link set lo up && exec $(PY) bench/publish_cpu.py --swiftrtc .build/release/swiftrtc --json artifacts/bench-publish-cpu.json'
	unshare --net bash -c 'ip link set lo up && exec $(PY) bench/reconnect_bench.py --swiftrtc .build/release/swiftrtc --runs 10 --json artifacts/bench-reconnect.json'

clean:
	rm -rf .build artifacts
