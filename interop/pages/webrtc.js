// Page side of the SwiftRTC interop tests. Driven over CDP with Runtime.evaluate:
//   echoCall(url, codec)  -> offer audio+video to a WHIP-style echo endpoint, show the echo
//   answerOffer(offerSdp[, config]) -> answer someone else's offer with the fake camera/microphone
//                         (config: an RTCConfiguration, e.g. TURN only; default no ICE servers)
//   stats()               -> compact getStats() summary of the current connection
'use strict';

window.pc = null;
window.log = [];

function note(line) {
  window.log.push(`${(performance.now() / 1000).toFixed(3)} ${line}`);
  const el = document.getElementById('status');
  if (el) el.textContent = window.log.slice(-12).join('\n');
}

function waitGatheringComplete(pc, timeoutMs = 5000) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => { note('gathering timeout, using what we have'); resolve(); }, timeoutMs);
    pc.addEventListener('icegatheringstatechange', () => {
      if (pc.iceGatheringState === 'complete') { clearTimeout(timer); resolve(); }
    });
  });
}

function watch(pc) {
  pc.addEventListener('connectionstatechange', () => note(`connectionState ${pc.connectionState}`));
  pc.addEventListener('iceconnectionstatechange', () => note(`iceConnectionState ${pc.iceConnectionState}`));
  pc.addEventListener('track', (ev) => {
    note(`track ${ev.track.kind} mid=${ev.transceiver.mid}`);
    if (ev.track.kind === 'video') {
      const v = document.getElementById('remote');
      v.srcObject = ev.streams[0] || new MediaStream([ev.track]);
      v.play().catch((e) => note(`remote play: ${e}`));
    }
  });
}

// Video codec preferences: only `codec` (VP8 or H264) plus the resilience formats.
function videoCodecs(codec) {
  const all = RTCRtpReceiver.getCapabilities('video').codecs;
  const want = `video/${codec}`.toLowerCase();
  const main = all.filter((c) => c.mimeType.toLowerCase() === want);
  if (main.length === 0) throw new Error(`Chromium has no ${codec} codec`);
  if (codec.toUpperCase() === 'H264') {
    // Constrained baseline, packetization-mode=1 first (what everybody implements).
    const rank = (c) => (/packetization-mode=1/.test(c.sdpFmtpLine || '') ? 0 : 2) +
                        (/profile-level-id=42e01f/.test(c.sdpFmtpLine || '') ? 0 : 1);
    main.sort((a, b) => rank(a) - rank(b));
  }
  const extra = all.filter((c) => ['video/rtx', 'video/red', 'video/ulpfec'].includes(c.mimeType.toLowerCase()));
  return [...main, ...extra];
}

// Resolves when `dc` opens. Listen from the channel's creation: under load the open event can be
// dispatched before the setRemoteDescription promise's continuation runs.
function whenOpen(dc) {
  const opened = new Promise((resolve, reject) => {
    if (dc.readyState === 'open') resolve();
    dc.addEventListener('open', () => resolve(), { once: true });
    dc.addEventListener('error', (e) => reject(new Error(`data channel error before open: ${e.error || e}`)), { once: true });
  });
  opened.catch(() => {});
  return (timeoutMs = 15000) => Promise.race([opened, new Promise((_, reject) => setTimeout(
    () => reject(new Error(`data channel not open after ${timeoutMs / 1000} s (${dc.readyState})`)), timeoutMs))]);
}

async function postOffer(url, sdp) {
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/sdp' }, body: sdp });
  const body = await res.text();
  if (res.status !== 201) throw new Error(`POST ${url}: HTTP ${res.status}: ${body.slice(0, 300)}`);
  return { answer: body, location: res.headers.get('Location') };
}

window.echoCall = async function echoCall(url, codec) {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: { width: 640, height: 480 } });
  document.getElementById('local').srcObject = stream;
  const pc = new RTCPeerConnection({ iceServers: [] });
  window.pc = pc;
  watch(pc);
  for (const track of stream.getTracks()) {
    const t = pc.addTransceiver(track, { direction: 'sendrecv', streams: [stream] });
    if (track.kind === 'video') t.setCodecPreferences(videoCodecs(codec));
  }
  await pc.setLocalDescription(await pc.createOffer());
  await waitGatheringComplete(pc);
  const offer = pc.localDescription.sdp;
  note(`POST offer (${offer.length} bytes) to ${url}`);
  const { answer, location } = await postOffer(url, offer);
  window.lastOffer = offer;
  window.lastAnswer = answer;
  window.resourceLocation = location ? new URL(location, url).href : null;
  await pc.setRemoteDescription({ type: 'answer', sdp: answer });
  note('answer applied');
  return { offer, answer, location };
};

window.hangup = async function hangup() {
  if (window.resourceLocation) {
    try { await fetch(window.resourceLocation, { method: 'DELETE' }); } catch (e) { note(`DELETE: ${e}`); }
  }
  if (window.pc) window.pc.close();
  return true;
};

window.answerOffer = async function answerOffer(offerSdp, config) {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: { width: 640, height: 480 } });
  document.getElementById('local').srcObject = stream;
  const pc = new RTCPeerConnection(config || { iceServers: [] });
  window.pc = pc;
  watch(pc);
  window.lastOffer = offerSdp;
  // A data channel the offerer opens: every message goes back on it (swiftrtc probe --datachannel).
  pc.ondatachannel = (ev) => {
    const ch = ev.channel;
    ch.binaryType = 'arraybuffer';
    ch.onmessage = (m) => ch.send(m.data);
    note(`data channel ${ch.label} id ${ch.id} from the offerer`);
  };
  await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
  const used = new Set();
  for (const t of pc.getTransceivers()) {
    const kind = t.receiver.track.kind;
    const track = stream.getTracks().find((tr) => tr.kind === kind && !used.has(tr));
    t.direction = 'sendrecv';
    if (track) {
      used.add(track);
      await t.sender.replaceTrack(track);
      t.sender.setStreams(stream);
    }
  }
  await pc.setLocalDescription(await pc.createAnswer());
  await waitGatheringComplete(pc);
  window.lastAnswer = pc.localDescription.sdp;
  note(`answer ready (${window.lastAnswer.length} bytes)`);
  return pc.localDescription.sdp;
};

// A subsequent offer on the connection answerOffer() made (ICE restart, renegotiation).
window.answerReoffer = async function answerReoffer(offerSdp) {
  const pc = window.pc;
  window.lastOffer = offerSdp;
  await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
  await pc.setLocalDescription();
  await waitGatheringComplete(pc);
  window.lastAnswer = pc.localDescription.sdp;
  note(`re-answer ready (${window.lastAnswer.length} bytes)`);
  return pc.localDescription.sdp;
};

window.stats = async function stats() {
  const pc = window.pc;
  if (!pc) return null;
  const report = await pc.getStats();
  const out = {
    connectionState: pc.connectionState,
    iceConnectionState: pc.iceConnectionState,
    video: null, audio: null, outVideo: null, outAudio: null, transport: null, pair: null, localCandidates: [],
    inbound: [],   // every inbound-rtp, by mid (a renegotiation may add m-lines)
  };
  const codecs = {};
  report.forEach((s) => { if (s.type === 'codec') codecs[s.id] = s; });
  report.forEach((s) => {
    if (s.type === 'inbound-rtp') out.inbound.push({ mid: s.mid, kind: s.kind, packetsReceived: s.packetsReceived || 0 });
    if (s.type === 'inbound-rtp' && s.kind === 'video') {
      const c = codecs[s.codecId];
      out.video = {
        mid: s.mid, framesDecoded: s.framesDecoded || 0, frameWidth: s.frameWidth || 0,
        frameHeight: s.frameHeight || 0, packetsReceived: s.packetsReceived || 0,
        codec: c ? c.mimeType : null, payloadType: c ? c.payloadType : null, keyFramesDecoded: s.keyFramesDecoded || 0,
      };
    } else if (s.type === 'inbound-rtp' && s.kind === 'audio') {
      const c = codecs[s.codecId];
      out.audio = { mid: s.mid, packetsReceived: s.packetsReceived || 0, codec: c ? c.mimeType : null,
                    payloadType: c ? c.payloadType : null, totalSamplesReceived: s.totalSamplesReceived || 0 };
    } else if (s.type === 'outbound-rtp' && s.kind === 'video') {
      const c = codecs[s.codecId];
      out.outVideo = { packetsSent: s.packetsSent || 0, framesEncoded: s.framesEncoded || 0,
                       frameWidth: s.frameWidth || 0, frameHeight: s.frameHeight || 0, codec: c ? c.mimeType : null };
    } else if (s.type === 'outbound-rtp' && s.kind === 'audio') {
      out.outAudio = { packetsSent: s.packetsSent || 0 };
    } else if (s.type === 'transport') {
      out.transport = { dtlsState: s.dtlsState, iceState: s.iceState, srtpCipher: s.srtpCipher,
                        dtlsCipher: s.dtlsCipher, tlsVersion: s.tlsVersion, selectedCandidatePairId: s.selectedCandidatePairId };
    } else if (s.type === 'local-candidate') {
      out.localCandidates.push(`${s.candidateType} ${s.protocol} ${s.address}:${s.port}`);
    }
  });
  if (out.transport && out.transport.selectedCandidatePairId) {
    const p = report.get(out.transport.selectedCandidatePairId);
    if (p) {
      const l = report.get(p.localCandidateId), r = report.get(p.remoteCandidateId);
      out.pair = { state: p.state, nominated: p.nominated,
                   local: l ? `${l.candidateType} ${l.address}:${l.port}` : null,
                   remote: r ? `${r.candidateType} ${r.address}:${r.port}` : null };
    }
  }
  return out;
};

note('webrtc.js loaded');

// Data channels (interop/test_datachannel.py): the content of message i of `size` bytes, the
// same formula as the test's Python side. Every tenth message (i % 10 == 5) is text.
function dcPayload(i, size) {
  if (i % 10 === 5) {
    let s = '';
    for (let j = 0; j < size; j++) s += String.fromCharCode(97 + ((i + j) % 26));
    return s;
  }
  const b = new Uint8Array(size);
  for (let j = 0; j < size; j++) b[j] = (i * 7 + j * 13) & 0xff;
  return b.buffer;
}

function dcSame(got, want) {
  if (typeof want === 'string') return got === want;
  if (!(got instanceof ArrayBuffer) || got.byteLength !== want.byteLength) return false;
  const a = new Uint8Array(got), b = new Uint8Array(want);
  for (let j = 0; j < a.length; j++) if (a[j] !== b[j]) return false;
  return true;
}

// Opens an ordered reliable channel to a WHIP-style echo endpoint (data only), sends one
// message per entry of `sizes` and checks every echo arrives intact and in order.
window.dataChannelEcho = async function dataChannelEcho(url, sizes) {
  const pc = new RTCPeerConnection({ iceServers: [] });
  window.pc = pc;
  watch(pc);
  const dc = pc.createDataChannel('echo', { ordered: true });
  const open = whenOpen(dc);
  dc.binaryType = 'arraybuffer';
  await pc.setLocalDescription(await pc.createOffer());
  await waitGatheringComplete(pc);
  const { answer, location } = await postOffer(url, pc.localDescription.sdp);
  window.lastOffer = pc.localDescription.sdp;
  window.lastAnswer = answer;
  window.resourceLocation = location ? new URL(location, url).href : null;
  await pc.setRemoteDescription({ type: 'answer', sdp: answer });
  note('answer applied');
  await open();
  note(`data channel open, id ${dc.id}, sending ${sizes.length} messages`);
  const started = performance.now();
  let received = 0, bytes = 0, firstBad = null;
  const done = new Promise((resolve) => {
    dc.onmessage = (ev) => {
      const i = received++;
      const size = typeof ev.data === 'string' ? ev.data.length : ev.data.byteLength;
      bytes += size;
      if (firstBad === null && (i >= sizes.length || !dcSame(ev.data, dcPayload(i, sizes[i])))) {
        firstBad = { index: i, gotSize: size, wantSize: sizes[i], gotType: typeof ev.data };
      }
      if (received === sizes.length) resolve();
    };
    dc.onclose = () => resolve();
  });
  dc.bufferedAmountLowThreshold = 1 << 20;
  let lowEvents = 0;
  dc.addEventListener('bufferedamountlow', () => { lowEvents++; });
  for (let i = 0; i < sizes.length; i++) {
    if (dc.bufferedAmount > (4 << 20)) {
      await new Promise((resolve) => dc.addEventListener('bufferedamountlow', resolve, { once: true }));
    }
    dc.send(dcPayload(i, sizes[i]));
  }
  const timeout = new Promise((resolve) => setTimeout(resolve, 240000));
  await Promise.race([done, timeout]);
  const seconds = (performance.now() - started) / 1000;
  note(`data channel: ${received}/${sizes.length} echoed in ${seconds.toFixed(2)} s`);
  const state = dc.readyState;
  // Our close resets the stream; the channel is closed once the echo resets its side too.
  const closeStarted = performance.now();
  const closed = await new Promise((resolve) => {
    dc.onclose = () => resolve(true);
    setTimeout(() => resolve(false), 5000);
    dc.close();
  });
  return { sent: sizes.length, received, bytes, firstBad, seconds, lowEvents, state,
           closed, closeMs: performance.now() - closeStarted,
           maxMessageSize: pc.sctp ? pc.sctp.maxMessageSize : null, answer };
};

// Lossy data channel check, in two steps so the test can turn the loss on in between:
// dataChannelOpen(url, init) connects (data only) and opens window.dc with `init`;
// dataChannelBurst(count, size, intervalMs, waitMs) sends `count` messages whose first 4 bytes
// are their index and returns the indexes echoed back within `waitMs` after the last send.
window.dataChannelOpen = async function dataChannelOpen(url, init) {
  const pc = new RTCPeerConnection({ iceServers: [] });
  window.pc = pc;
  watch(pc);
  const dc = pc.createDataChannel('lossy', init);
  const open = whenOpen(dc);
  dc.binaryType = 'arraybuffer';
  window.dc = dc;
  window.dcEchoed = [];
  dc.onmessage = (ev) => { window.dcEchoed.push(new DataView(ev.data).getUint32(0)); };
  await pc.setLocalDescription(await pc.createOffer());
  await waitGatheringComplete(pc);
  const { answer, location } = await postOffer(url, pc.localDescription.sdp);
  window.resourceLocation = location ? new URL(location, url).href : null;
  await pc.setRemoteDescription({ type: 'answer', sdp: answer });
  note('answer applied');
  await open();
  return { id: dc.id, ordered: dc.ordered, maxRetransmits: dc.maxRetransmits };
};

window.dataChannelBurst = async function dataChannelBurst(count, size, intervalMs, waitMs) {
  const dc = window.dc;
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const b = new ArrayBuffer(Math.max(4, size));
    new DataView(b).setUint32(0, i);
    dc.send(b);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  return { echoed: window.dcEchoed, seconds: (performance.now() - started) / 1000, state: dc.readyState };
};
