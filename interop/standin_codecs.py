"""Video encoders for the publish stand-in whose rate control honours maxBitrate.

aiortc's own encoders miss a 500 kbps ceiling at 1280x720@30 on the test pattern, both ways:
libx264 (ABR, preset medium) undershoots to ~260-330 kbps and is too slow for 30 fps here;
libvpx cannot go below ~850 kbps at all: at 720p even its maximum quantizer costs ~2 KB per
frame (3600 macroblocks) plus the scrolling gradient, so 500 kbps at 30 fps is below VP8's floor
and only frame dropping (libwebrtc's rc_dropframe_thresh=30) or a smaller size can meet it.
These subclasses keep aiortc's packetization and change only the encoder configuration:
- H.264: preset ultrafast + zerolatency, constrained baseline; with a ceiling, CBR with a 1 s VBV
  (x264 nal-hrd=cbr), which lands within a few percent of the target.
- VP8: CBR as aiortc configures it, plus frame dropping (drop-threshold 30), qmax 63, no temporal
  denoiser, cpu-used -12, one thread, and the frames' real timestamps for the rate control.
install(ceiling_bps) replaces aiortc's get_encoder for video in this process.
"""

from __future__ import annotations

import fractions
import av

from aiortc.codecs import h264 as aiortc_h264
from aiortc.codecs import vpx as aiortc_vpx


# Frames given to the encoders and frames that produced a bitstream (the rest were dropped by
# the rate control), for the stand-in's framesEncoded/framesSent.
COUNTS = {"input": 0, "encoded": 0}


class StandinH264Encoder(aiortc_h264.H264Encoder):
    ceiling_bps: int | None = None

    def _encode_frame(self, frame: av.VideoFrame, force_keyframe: bool):
        if self.codec and (frame.width != self.codec.width or frame.height != self.codec.height
                           or abs(self.target_bitrate - self.codec.bit_rate) / self.codec.bit_rate > 0.1):
            self.buffer_data = b""
            self.buffer_pts = None
            self.codec = None
        frame.pict_type = av.video.frame.PictureType.I if force_keyframe else av.video.frame.PictureType.NONE
        if self.codec is None:
            kbps = self.target_bitrate // 1000
            self.codec = av.CodecContext.create("libx264", "w")
            self.codec.width = frame.width
            self.codec.height = frame.height
            self.codec.bit_rate = self.target_bitrate
            self.codec.pix_fmt = "yuv420p"
            self.codec.framerate = fractions.Fraction(30, 1)
            self.codec.time_base = frame.time_base or fractions.Fraction(1, 90000)
            options = {"level": "31", "tune": "zerolatency", "preset": "ultrafast"}
            if self.ceiling_bps:
                options["x264-params"] = f"vbv-maxrate={kbps}:vbv-bufsize={kbps}:nal-hrd=cbr"
            self.codec.options = options
            self.codec.profile = "Baseline"
        data = b"".join(bytes(p) for p in self.codec.encode(frame))
        COUNTS["input"] += 1
        if data:
            COUNTS["encoded"] += 1
            yield from self._split_bitstream(data)


class StandinVp8Encoder(aiortc_vpx.Vp8Encoder):
    def encode(self, frame, force_keyframe: bool = False):
        if frame.format.name != "yuv420p":
            frame = frame.reformat(format="yuv420p")
        if self.codec and (frame.width != self.codec.width or frame.height != self.codec.height
                           or abs(self.target_bitrate - self.codec.bit_rate) / self.codec.bit_rate > 0.1):
            self.codec = None
        if force_keyframe:
            frame.pict_type = av.video.frame.PictureType.I
        if self.codec is None:
            bps = self.target_bitrate
            self.codec = av.CodecContext.create("libvpx", "w")
            self.codec.width = frame.width
            self.codec.height = frame.height
            self.codec.bit_rate = bps
            self.codec.pix_fmt = "yuv420p"
            self.codec.gop_size = 3000
            # real timestamps for the rate control (frames come at a variable rate when CPU-bound)
            self.codec.time_base = frame.time_base or fractions.Fraction(1, 90000)
            self.codec.framerate = fractions.Fraction(30, 1)
            self.codec.qmin = 2
            self.codec.qmax = 63
            self.codec.options = {
                "bufsize": str(bps), "cpu-used": "-12", "deadline": "realtime", "lag-in-frames": "0",
                "minrate": str(bps), "maxrate": str(bps), "noise-sensitivity": "0",
                "overshoot-pct": "15", "partitions": "0", "static-thresh": "1", "undershoot-pct": "100",
                # libwebrtc's VP8 setting: drop frames when the buffer runs low
                "drop-threshold": "30",
            }
            self.codec.thread_count = 1
        data = b"".join(bytes(p) for p in self.codec.encode(frame))
        timestamp = aiortc_vpx.convert_timebase(frame.pts, frame.time_base, aiortc_vpx.VIDEO_TIME_BASE)
        COUNTS["input"] += 1
        if data:
            COUNTS["encoded"] += 1
        if not data:  # dropped by the rate control: no packets, and no picture ID used (a gap
            return [], timestamp  # in picture IDs makes the receiver assume loss and ask for PLI)
        payloads = self._packetize(data, self.picture_id)
        self.picture_id = (self.picture_id + 1) % (1 << 15)
        return payloads, timestamp


def install(ceiling_bps: int | None) -> None:
    """Use the stand-in encoders for video; with a ceiling (the sender's maxBitrate), the video
    bitrate is ceiling_bps whatever the receiver's REMB says."""
    import aiortc.rtcrtpsender as sender_mod
    if ceiling_bps:
        # Pinned, not just capped: aiortc re-creates its encoder (a keyframe burst) on every
        # >10% change of the REMB estimate, and the ramp-up on loopback then overshoots the
        # ceiling by 40-80%. On loopback the estimate only ever ramps up, so pinning is harmless.
        for mod in (aiortc_h264, aiortc_vpx):
            mod.MAX_BITRATE = mod.MIN_BITRATE = mod.DEFAULT_BITRATE = ceiling_bps
    else:
        # aiortc starts VP8 at 500 kbps, where 720p30 loses half its frames to the frame dropper
        aiortc_vpx.DEFAULT_BITRATE = aiortc_vpx.MAX_BITRATE
    StandinH264Encoder.ceiling_bps = ceiling_bps
    original = sender_mod.get_encoder

    def get_encoder(codec):
        mime = codec.mimeType.lower()
        if mime == "video/h264":
            return StandinH264Encoder()
        if mime == "video/vp8":
            return StandinVp8Encoder()
        return original(codec)

    sender_mod.get_encoder = get_encoder
