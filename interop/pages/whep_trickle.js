// A WHEP player with trickle ICE and ICE restart by HTTP PATCH (RFC 9725 §4.3), the way a
// browser client does it: the offer goes out at once without candidates, each candidate and the
// end of candidates follow as application/trickle-ice-sdpfrag PATCHes (If-Match: the ETag),
// restart() PATCHes new credentials with If-Match: * and applies the server's fragment.
// Injected into a page of the server's own origin by interop/test_whip_trickle.py.
window.whepTrickle = {
  log: [],
  patches: [],

  async play(url) {
    const s = this;
    const pc = (s.pc = new RTCPeerConnection());
    s.pending = [];
    s.ended = false;
    s.endSent = false;
    s.chain = Promise.resolve();
    pc.addTransceiver('video', {direction: 'recvonly'});
    pc.addTransceiver('audio', {direction: 'recvonly'});
    const video = document.createElement('video');
    video.id = 'whep-video';
    video.muted = true;
    video.autoplay = true;
    document.body.appendChild(video);
    pc.ontrack = (e) => {
      if (e.track.kind === 'video') video.srcObject = new MediaStream([e.track]);
    };
    pc.onicecandidate = (e) => {
      if (e.candidate && e.candidate.candidate) s.pending.push(e.candidate.candidate);
      if (!e.candidate) s.ended = true;
      s.schedule();
    };
    const offer = await pc.createOffer();
    await pc.setLocalDescription(offer);
    s.offerHadCandidates = /^a=candidate:/m.test(offer.sdp);
    const r = await fetch(url, {method: 'POST', headers: {'Content-Type': 'application/sdp'}, body: offer.sdp});
    if (r.status !== 201) throw new Error(`POST ${r.status}: ${await r.text()}`);
    s.resource = new URL(r.headers.get('Location'), url).href;
    s.etag = r.headers.get('ETag');
    s.acceptPatch = r.headers.get('Accept-Patch');
    await pc.setRemoteDescription({type: 'answer', sdp: await r.text()});
    s.ready = true;
    s.schedule();
    return {etag: s.etag, acceptPatch: s.acceptPatch, offerHadCandidates: s.offerHadCandidates};
  },

  // ufrag, pwd and the first m-section's m= and a=mid lines of a description.
  ice(sdp) {
    const lines = sdp.split(/\r?\n/);
    const first = lines.findIndex((l) => l.startsWith('m='));
    const end = lines.findIndex((l, i) => i > first && l.startsWith('m='));
    const section = lines.slice(first, end < 0 ? undefined : end);
    const value = (name) => (lines.find((l) => l.startsWith(`a=${name}:`)) || '').slice(name.length + 3);
    return {ufrag: value('ice-ufrag'), pwd: value('ice-pwd'), mline: section[0],
            mid: (section.find((l) => l.startsWith('a=mid:')) || 'a=mid:0').slice(6)};
  },

  fragment(sdp, candidates, ended) {
    const ice = this.ice(sdp);
    const lines = [`a=ice-ufrag:${ice.ufrag}`, `a=ice-pwd:${ice.pwd}`, ice.mline, `a=mid:${ice.mid}`,
                   ...candidates.map((c) => `a=${c}`)];
    if (ended) lines.push('a=end-of-candidates');
    return lines.join('\r\n') + '\r\n';
  },

  schedule() {
    if (!this.ready || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.chain = this.chain.then(() => this.flush()).catch((e) => this.log.push(`flush: ${e}`));
    }, 20);
  },

  async flush() {
    const candidates = this.pending.splice(0);
    const end = this.ended && !this.endSent;
    if (!candidates.length && !end) return;
    const body = this.fragment(this.pc.localDescription.sdp, candidates, end);
    const r = await fetch(this.resource, {method: 'PATCH', body,
      headers: {'Content-Type': 'application/trickle-ice-sdpfrag', 'If-Match': this.etag}});
    this.patches.push({status: r.status, candidates: candidates.length, end, etag: r.headers.get('ETag')});
    if (end && r.status === 204) this.endSent = true;
  },

  restart() {
    const run = async () => {
      const pc = this.pc;
      pc.restartIce();
      const offer = await pc.createOffer();
      await pc.setLocalDescription(offer);
      this.ended = false;
      this.endSent = false;
      const r = await fetch(this.resource, {method: 'PATCH', body: this.fragment(offer.sdp, [], false),
        headers: {'Content-Type': 'application/trickle-ice-sdpfrag', 'If-Match': '*'}});
      const text = await r.text();
      this.patches.push({status: r.status, restart: true, etag: r.headers.get('ETag')});
      if (r.status !== 200) throw new Error(`restart PATCH ${r.status}: ${text}`);
      this.etag = r.headers.get('ETag');
      await pc.setRemoteDescription({type: 'answer', sdp: this.applyRestart(pc.currentRemoteDescription.sdp, text)});
      return {ufrag: this.ice(pc.localDescription.sdp).ufrag, serverUfrag: this.ice(pc.currentRemoteDescription.sdp).ufrag};
    };
    const done = this.chain.then(run);
    this.chain = done.catch(() => {});
    return done;
  },

  // The answer with the server fragment's credentials and candidates (no new SDP in WHEP).
  applyRestart(sdp, fragment) {
    const f = fragment.split(/\r?\n/);
    const pick = (name) => (f.find((l) => l.startsWith(`a=${name}:`)) || '').slice(name.length + 3);
    const candidates = f.filter((l) => l.startsWith('a=candidate:'));
    const ended = f.includes('a=end-of-candidates');
    const out = [];
    let firstMid = true;
    for (const l of sdp.split(/\r?\n/)) {
      if (l.startsWith('a=candidate:') || l === 'a=end-of-candidates' || l === '') continue;
      if (l.startsWith('a=ice-ufrag:')) { out.push(`a=ice-ufrag:${pick('ice-ufrag')}`); continue; }
      if (l.startsWith('a=ice-pwd:')) { out.push(`a=ice-pwd:${pick('ice-pwd')}`); continue; }
      out.push(l);
      if (l.startsWith('a=mid:') && firstMid) {
        firstMid = false;
        out.push(...candidates);
        if (ended) out.push('a=end-of-candidates');
      }
    }
    return out.join('\r\n') + '\r\n';
  },

  async stats() {
    const report = await this.pc.getStats();
    let frames = 0, pair = null;
    report.forEach((s) => {
      if (s.type === 'inbound-rtp' && s.kind === 'video') frames = s.framesDecoded || 0;
      if (s.type === 'transport' && s.selectedCandidatePairId) pair = report.get(s.selectedCandidatePairId);
    });
    return {frames, state: this.pc.connectionState, ice: this.pc.iceConnectionState,
            pairRequests: pair ? (pair.requestsSent || 0) : 0, pairResponses: pair ? (pair.responsesReceived || 0) : 0};
  },
};
true;
