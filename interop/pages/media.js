// Media side of the SwiftRTC interop tests (issue 3), loaded after webrtc.js (note, watch,
// waitGatheringComplete). Driven over CDP:
//   whipAnswer(offerSdp) -> answer a publisher's sendonly offer recvonly; read the test pattern
//                           (/work/dev/TESTPATTERN.md) of every rendered frame from a canvas
//   whepAnswer(offerSdp) -> answer a player's recvonly offer sendonly with the fake camera and
//                           fake microphone (Chromium's fake audio is a periodic beep)
//   mediaStats()         -> getStats() summary (inbound/outbound, bytes, fps, codec) + pattern reader
'use strict';

window.reader = null;

function patternReader(video) {
  const r = {
    frames: 0, numbers: [], latencies: [], unread: 0, sizes: {}, meanLuma: null,
    presentedFrames: 0, repeatedReads: 0, lastReadAt: null, error: null,
  };
  const band = document.createElement('canvas');
  const bctx = band.getContext('2d', { willReadFrequently: true });
  const small = document.createElement('canvas');
  small.width = 64; small.height = 36;
  const sctx = small.getContext('2d', { willReadFrequently: true });
  const luma = (d, i) => 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2];

  function read(w, h) {
    const cw = Math.floor(w / 32), ch = Math.floor(h / 24);
    if (cw < 2 || ch < 2) return null;
    const bw = 32 * cw, bh = 3 * ch;
    if (band.width !== bw || band.height !== bh) { band.width = bw; band.height = bh; }
    // Only the band, at native scale (source rect = destination rect).
    bctx.drawImage(video, 0, 0, bw, bh, 0, 0, bw, bh);
    const d = bctx.getImageData(0, 0, bw, bh).data;
    const words = [0, 0, 0];
    const x0 = Math.floor(cw / 4), x1 = Math.floor(3 * cw / 4);
    const y0 = Math.floor(ch / 4), y1 = Math.floor(3 * ch / 4);
    for (let row = 0; row < 3; row++) {
      let word = 0;
      for (let col = 0; col < 32; col++) {
        let sum = 0, n = 0;
        for (let y = row * ch + y0; y < row * ch + y1; y++) {
          for (let x = col * cw + x0; x < col * cw + x1; x++) { sum += luma(d, (y * bw + x) * 4); n++; }
        }
        word = ((word << 1) | (sum / n > 128 ? 1 : 0)) >>> 0;
      }
      words[row] = word;
    }
    if (((~(words[0] ^ words[1])) >>> 0) !== words[2]) return null;
    return { n: words[0], ms: words[1] };
  }

  function onFrame(now, meta) {
    try {
      const w = video.videoWidth, h = video.videoHeight;
      if (w && h) {
        r.frames++;
        r.presentedFrames = meta.presentedFrames;
        const key = `${w}x${h}`;
        r.sizes[key] = (r.sizes[key] || 0) + 1;
        const got = read(w, h);
        // drawImage draws the video's current frame, not the callback's: a callback that runs
        // late on a loaded machine draws the next frame, and that frame's own callback draws it
        // again. The same number twice in a row is one frame read twice (a decrease still fails).
        if (got && r.numbers.length && got.n === r.numbers[r.numbers.length - 1]) {
          r.repeatedReads++;
        } else if (got) {
          r.numbers.push(got.n);
          const nowMs = Date.now() % 4294967296;
          r.latencies.push((nowMs - got.ms + 4294967296) % 4294967296);
          r.lastReadAt = performance.now();
        } else {
          r.unread++;
        }
        sctx.drawImage(video, 0, 0, 64, 36);
        const s = sctx.getImageData(0, 0, 64, 36).data;
        let sum = 0;
        for (let i = 0; i < s.length; i += 4) sum += luma(s, i);
        r.meanLuma = sum / (s.length / 4);
        const el = document.getElementById('pattern');
        if (el) el.textContent = `pattern: ${w}x${h} frames ${r.frames} read ${r.numbers.length} last #${got ? got.n : '-'} luma ${r.meanLuma.toFixed(1)}`;
      }
    } catch (e) {
      r.error = String(e);
    }
    video.requestVideoFrameCallback(onFrame);
  }
  video.requestVideoFrameCallback(onFrame);
  return r;
}

function readerSummary(r) {
  if (!r) return null;
  const nums = r.numbers;
  let increasing = true;
  let disorder = null;
  for (let i = 1; i < nums.length; i++) {
    if (!(nums[i] > nums[i - 1])) { increasing = false; disorder = nums.slice(Math.max(0, i - 3), i + 3); break; }
  }
  const lat = [...r.latencies].sort((a, b) => a - b);
  return {
    frames: r.frames, patternFrames: nums.length + r.repeatedReads, unreadFrames: r.unread, increasing,
    firstNumber: nums.length ? nums[0] : null, lastNumber: nums.length ? nums[nums.length - 1] : null,
    lastNumbers: nums.slice(-10), sizes: r.sizes, meanLumaLast: r.meanLuma,
    latencyMsP50: lat.length ? lat[Math.floor(lat.length / 2)] : null,
    latencyMsMax: lat.length ? lat[lat.length - 1] : null,
    presentedFrames: r.presentedFrames, repeatedReads: r.repeatedReads, disorder, error: r.error,
  };
}

window.whipAnswer = async function whipAnswer(offerSdp) {
  const pc = new RTCPeerConnection({ iceServers: [] });
  window.pc = pc;
  watch(pc);  // attaches the remote video to #remote
  pc.addEventListener('track', (ev) => {
    if (ev.track.kind === 'video' && !window.reader) {
      window.reader = patternReader(document.getElementById('remote'));
    }
  });
  window.lastOffer = offerSdp;
  await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
  for (const t of pc.getTransceivers()) t.direction = 'recvonly';
  await pc.setLocalDescription(await pc.createAnswer());
  await waitGatheringComplete(pc);
  window.lastAnswer = pc.localDescription.sdp;
  note(`whip answer ready (${window.lastAnswer.length} bytes)`);
  return pc.localDescription.sdp;
};

window.whepAnswer = async function whepAnswer(offerSdp) {
  const stream = await navigator.mediaDevices.getUserMedia({
    // No processing: keep the fake device's beep as it is.
    audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false },
    video: { width: 640, height: 480, frameRate: 30 },
  });
  document.getElementById('local').srcObject = stream;
  // Keep the camera's size: without this Chromium starts at 480x360 (low start bitrate / CPU
  // adaptation) and a receiver cannot check "the size Chromium sends".
  for (const t of stream.getVideoTracks()) t.contentHint = 'detail';
  window.localSettings = stream.getTracks().map((t) => ({ kind: t.kind, ...t.getSettings() }));
  const pc = new RTCPeerConnection({ iceServers: [] });
  window.pc = pc;
  watch(pc);
  window.lastOffer = offerSdp;
  await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
  const used = new Set();
  for (const t of pc.getTransceivers()) {
    const kind = t.receiver.track.kind;
    const track = stream.getTracks().find((tr) => tr.kind === kind && !used.has(tr));
    if (!track) { t.direction = 'inactive'; continue; }
    used.add(track);
    await t.sender.replaceTrack(track);
    t.sender.setStreams(stream);
    t.direction = 'sendonly';
  }
  await pc.setLocalDescription(await pc.createAnswer());
  for (const t of pc.getTransceivers()) {
    if (t.sender.track && t.sender.track.kind === 'video') {
      try {
        const p = t.sender.getParameters();
        p.degradationPreference = 'maintain-resolution';
        await t.sender.setParameters(p);
      } catch (e) { note(`setParameters(degradationPreference): ${e}`); }
    }
  }
  await waitGatheringComplete(pc);
  window.lastAnswer = pc.localDescription.sdp;
  note(`whep answer ready (${window.lastAnswer.length} bytes)`);
  return pc.localDescription.sdp;
};

window.mediaStats = async function mediaStats() {
  const pc = window.pc;
  if (!pc) return null;
  const report = await pc.getStats();
  const codecs = {};
  report.forEach((s) => { if (s.type === 'codec') codecs[s.id] = s; });
  const codecOf = (s) => {
    const c = codecs[s.codecId];
    return c ? { mimeType: c.mimeType, payloadType: c.payloadType, sdpFmtpLine: c.sdpFmtpLine || null } : null;
  };
  const out = { connectionState: pc.connectionState, timestamp: null, video: null, audio: null,
                outVideo: null, outAudio: null, transport: null, reader: readerSummary(window.reader),
                localSettings: window.localSettings || null };
  report.forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'video') {
      out.timestamp = s.timestamp;
      out.video = {
        timestamp: s.timestamp, framesDecoded: s.framesDecoded || 0, framesReceived: s.framesReceived || 0,
        framesDropped: s.framesDropped || 0, keyFramesDecoded: s.keyFramesDecoded || 0,
        frameWidth: s.frameWidth || 0, frameHeight: s.frameHeight || 0,
        framesPerSecond: s.framesPerSecond || 0, bytesReceived: s.bytesReceived || 0,
        headerBytesReceived: s.headerBytesReceived || 0, packetsReceived: s.packetsReceived || 0,
        packetsLost: s.packetsLost || 0, nackCount: s.nackCount || 0, pliCount: s.pliCount || 0,
        decoderImplementation: s.decoderImplementation || null, codec: codecOf(s),
      };
    } else if (s.type === 'inbound-rtp' && s.kind === 'audio') {
      out.audio = { timestamp: s.timestamp, packetsReceived: s.packetsReceived || 0, bytesReceived: s.bytesReceived || 0,
                    totalSamplesReceived: s.totalSamplesReceived || 0, audioLevel: s.audioLevel || 0,
                    totalAudioEnergy: s.totalAudioEnergy || 0, codec: codecOf(s) };
    } else if (s.type === 'outbound-rtp' && s.kind === 'video') {
      out.outVideo = { timestamp: s.timestamp, framesEncoded: s.framesEncoded || 0, framesSent: s.framesSent || 0,
                       frameWidth: s.frameWidth || 0, frameHeight: s.frameHeight || 0,
                       framesPerSecond: s.framesPerSecond || 0, bytesSent: s.bytesSent || 0,
                       encoderImplementation: s.encoderImplementation || null, codec: codecOf(s) };
    } else if (s.type === 'outbound-rtp' && s.kind === 'audio') {
      out.outAudio = { packetsSent: s.packetsSent || 0, bytesSent: s.bytesSent || 0, codec: codecOf(s) };
    } else if (s.type === 'transport') {
      out.transport = { dtlsState: s.dtlsState, iceState: s.iceState };
    }
  });
  return out;
};

note('media.js loaded');
