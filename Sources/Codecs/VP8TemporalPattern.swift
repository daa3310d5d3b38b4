import CVPX
import Media

/// VP8 temporal scalability (L1T2, L1T3) as libwebrtc sets it up: a fixed pattern of frames
/// whose references let a relay drop the upper layers and leave a stream that still decodes.
/// Reference buffers: LAST holds the newest base-layer (TL0) frame, GOLDEN the newest TL1 of
/// L1T3.
///   L1T2  0 1 0 1 …  TL1 references LAST only and nothing references it.
///   L1T3  0 2 1 2 …  TL1 references LAST and updates GOLDEN; the first TL2 references LAST,
///                    the second LAST and GOLDEN; nothing references a TL2 frame.
/// Upper-layer frames leave the entropy context alone (a dropped one must not change how the
/// next base frame is read). A keyframe is TL0, refreshes every buffer and restarts the pattern.
struct VP8TemporalPattern {
    struct Step: Equatable {
        let info: TemporalLayerInfo
        /// libvpx per-frame flags (VP8_EFLAG_*) for the references it may use and update.
        let flags: Int
    }

    let layers: Int
    private var position = 0

    init?(layers: Int) {
        guard layers == 2 || layers == 3 else { return nil }
        self.layers = layers
    }

    var period: Int { layers == 2 ? 2 : 4 }
    /// The layer of each frame of one period (libvpx `ts_layer_id`).
    var layerIDs: [UInt32] { layers == 2 ? [0, 1] : [0, 2, 1, 2] }
    /// libvpx `ts_rate_decimator`: each layer's frame rate divides the full rate by this.
    var rateDecimators: [UInt32] { layers == 2 ? [2, 1] : [4, 2, 1] }
    /// The share of the bitrate the layers up to each one take (libwebrtc's 60/40 and 40/20/40).
    var cumulativeShares: [Double] { layers == 2 ? [0.6, 1.0] : [0.4, 0.6, 1.0] }

    /// A keyframe came that `next` did not place: the frame after it starts the period's second slot.
    mutating func restart() { position = 1 % period }

    /// The next frame's place (a keyframe restarts the pattern).
    mutating func next(keyframe: Bool) -> Step {
        if keyframe { position = 0 }
        defer { position = (position + 1) % period }
        let refOnlyLast = Int(VP8_EFLAG_NO_REF_GF | VP8_EFLAG_NO_REF_ARF)
        let keepUpper = Int(VP8_EFLAG_NO_UPD_ARF | VP8_EFLAG_NO_UPD_ENTROPY)
        let updateNothing = Int(VP8_EFLAG_NO_UPD_LAST | VP8_EFLAG_NO_UPD_GF) | keepUpper
        switch (layerIDs[position], position) {
        case (0, _):
            return Step(info: TemporalLayerInfo(layer: 0, sync: false, isReference: true),
                        flags: keyframe ? 0 : refOnlyLast | Int(VP8_EFLAG_NO_UPD_GF | VP8_EFLAG_NO_UPD_ARF))
        case (1, _) where layers == 3:
            return Step(info: TemporalLayerInfo(layer: 1, sync: true, isReference: true),
                        flags: refOnlyLast | Int(VP8_EFLAG_NO_UPD_LAST) | keepUpper)
        case (let layer, let p):
            // L1T2's TL1 and L1T3's first TL2 lean on the base only (a sync point); the second
            // TL2 also on the period's TL1.
            let sync = layers == 2 || p == 1
            return Step(info: TemporalLayerInfo(layer: UInt8(layer), sync: sync, isReference: false),
                        flags: (sync ? refOnlyLast : Int(VP8_EFLAG_NO_REF_ARF)) | updateNothing)
        }
    }
}
