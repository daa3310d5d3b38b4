import Testing
@testable import Relay

/// Which simulcast layer a player gets (`?layer=`): ranked by the size their keyframes showed
/// once all have, by the publisher's rid order before; streams without a negotiated rid are
/// not layers; the SSRCs kept are bounded.
@Suite struct RelayLayersTests {
    @Test func theQueryNamesALayer() {
        #expect(LayerPreference(query: "app=live&stream=s&layer=low") == .low)
        #expect(LayerPreference(query: "layer=mid") == .mid)
        #expect(LayerPreference(query: "layer=huge") == nil && LayerPreference(query: "stream=layer") == nil)
        #expect(LayerPreference(query: "") == nil)
    }

    @Test func layersRankBySizeOnceKnownElseByRidOrder() {
        var layers = VideoLayers()
        layers.rids = ["h", "m", "l"]   // an app that lists its encodings largest first
        #expect(layers.isSimulcast)
        for (ssrc, rid) in [(30 as UInt32, "l"), (10, "h"), (20, "m"), (40, nil as String?)] {
            let kept = layers.touch(ssrc, rid: rid)
            #expect(kept)
        }
        // Sizes unknown: the rid order, so "high" is the last listed (here the smallest).
        #expect(layers.ranked.map(\.ssrc) == [10, 20, 30])
        #expect(layers.choice(.high, in: layers.ranked) == 30)
        layers[10]?.size = (1280, 720)
        layers[20]?.size = (640, 360)
        #expect(layers.ranked.map(\.ssrc) == [10, 20, 30], "one layer's size still unknown")
        layers[30]?.size = (320, 180)
        let ranked = layers.ranked
        #expect(ranked.map(\.ssrc) == [30, 20, 10])
        #expect(layers.choice(.low, in: ranked) == 30 && layers.choice(.mid, in: ranked) == 20 && layers.choice(.high, in: ranked) == 10)
        #expect(layers.largestSize?.width == 1280)
        // Two layers: mid is the smaller.
        var two = VideoLayers()
        two.rids = ["a", "b"]
        _ = two.touch(1, rid: "a")
        _ = two.touch(2, rid: "b")
        #expect(two.choice(.mid, in: two.ranked) == 1)
    }

    /// A layer the publisher stops sending (its estimate no longer carries it) is not chosen;
    /// when it sends again it is.
    @Test func aSilentLayerIsNotChosenUntilItSendsAgain() {
        let t0 = ContinuousClock.now
        var layers = VideoLayers()
        layers.rids = ["l", "h"]
        for (ssrc, rid) in [(1 as UInt32, "l"), (2, "h")] {
            _ = layers.touch(ssrc, rid: rid)
            layers[ssrc]?.lastPacketAt = t0
        }
        layers[1]?.size = (320, 180)
        layers[2]?.size = (1280, 720)
        layers[1]?.lastPacketAt = t0 + .seconds(2)
        #expect(!layers.retirementChanged(silentSince: t0), "both sent since")
        #expect(layers.retirementChanged(silentSince: t0 + .seconds(1)), "h went silent")
        layers.retire(silentSince: t0 + .seconds(1))
        #expect(!layers.retirementChanged(silentSince: t0 + .seconds(1)), "nothing new once retired")
        #expect(layers.choice(.high, in: layers.ranked) == 1, "h silent for a second: the largest still sending")
        layers[2]?.lastPacketAt = t0 + .seconds(3)
        #expect(layers.retirementChanged(silentSince: t0 + .seconds(2)), "h sends again")
        layers.retire(silentSince: t0 + .seconds(2))
        #expect(layers.ranked.map(\.ssrc) == [1, 2], "back, ranked by rid order until its next keyframe shows its size")
        #expect(layers.choice(.high, in: layers.ranked) == 2)
    }

    @Test func aRidLearnedLaterAndTheLimit() {
        var layers = VideoLayers()
        layers.rids = ["l", "h"]
        _ = layers.touch(1, rid: nil)
        #expect(layers.ranked.isEmpty, "no rid yet: not a layer")
        _ = layers.touch(1, rid: "l")
        #expect(layers.ranked.map(\.rid) == ["l"])
        for ssrc in UInt32(2)...UInt32(VideoLayers.limit) { _ = layers.touch(ssrc, rid: nil) }
        let kept = layers.touch(1000, rid: "h")
        #expect(!kept, "past the limit an SSRC is not kept")
        #expect(layers.bySSRC.count == VideoLayers.limit)
    }
}
