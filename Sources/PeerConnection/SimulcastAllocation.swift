/// How a simulcast sender splits the bandwidth estimate across its layers, as libwebrtc does:
/// lowest layer first; each lower layer gets its target rate, the highest one that fits the
/// rest up to its maximum; a layer switches on only when what is left after the layers below it
/// covers its minimum (a little more to switch back on, so it does not flap), and the lowest
/// always sends. Pure: every layer's encoder computes the whole split and takes its share.
struct SimulcastAllocation {
    /// libwebrtc's rates for a layer of about this many pixels (kSimulcastFormats): min, target, max.
    struct Rates: Equatable {
        var min: Int, target: Int, max: Int
    }

    /// To switch a layer back on, what is left must cover its minimum by this much.
    static let onHysteresis = 1.2

    static func defaultRates(width: Int, height: Int) -> Rates {
        let pixels = width * height
        let table: [(pixels: Int, rates: Rates)] = [
            (1920 * 1080, Rates(min: 800_000, target: 4_000_000, max: 5_000_000)),
            (1280 * 720, Rates(min: 600_000, target: 2_500_000, max: 2_500_000)),
            (960 * 540, Rates(min: 350_000, target: 1_200_000, max: 1_200_000)),
            (640 * 360, Rates(min: 150_000, target: 500_000, max: 700_000)),
            (480 * 270, Rates(min: 150_000, target: 350_000, max: 450_000)),
            (320 * 180, Rates(min: 30_000, target: 150_000, max: 200_000)),
        ]
        // The largest row this size reaches (at least 90% of its pixels), else the smallest.
        return table.first { pixels * 10 >= $0.pixels * 9 }?.rates ?? table.last!.rates
    }

    /// One layer as the split sees it: its rates (the encoding's own min/max bitrate over the
    /// defaults for its size) and whether it was sending before this split.
    struct Layer: Equatable {
        var rates: Rates
        var wasOn: Bool
    }

    /// The layers of `encodings` (those `indices` name: negotiated and active) for a source of
    /// `width`×`height`, smallest first, with where each sits in `encodings`.
    static func layers(of encodings: [RtpEncodingParameters], indices: [Int], width: Int, height: Int,
                       wasOn: (Int) -> Bool) -> [(index: Int, layer: Layer)] {
        indices.filter { encodings.indices.contains($0) && encodings[$0].active }.map { i in
            let e = encodings[i], scale = max(1, e.scaleResolutionDownBy ?? 1)
            var r = defaultRates(width: Int(Double(width) / scale), height: Int(Double(height) / scale))
            if let m = e.maxBitrate { r.max = m; r.target = min(r.target, m) }
            if let m = e.minBitrate { r.min = m; r.target = max(r.target, m); r.max = max(r.max, m) }
            r.min = min(r.min, r.target)
            return (i, Layer(rates: r, wasOn: wasOn(i)))
        }.sorted { ($0.layer.rates.max, $0.index) < ($1.layer.rates.max, $1.index) }
    }

    /// Each layer's bits per second for an estimate of `total` (0: off), in the order given
    /// (smallest first).
    static func split(_ total: Int, _ layers: [Layer]) -> [Int] {
        guard !layers.isEmpty else { return [] }
        // Which layers are on: the lowest always; the next when the targets below it and its
        // own minimum fit.
        var on = 1, below = layers[0].rates.target
        while on < layers.count {
            let next = layers[on]
            let need = Double(next.rates.min) * (next.wasOn ? 1 : onHysteresis)
            guard Double(total - below) >= need else { break }
            below += next.rates.target
            on += 1
        }
        var out = [Int](repeating: 0, count: layers.count)
        var left = total
        for i in 0..<on {
            let isTop = i == on - 1
            let share = isTop ? min(left, layers[i].rates.max) : min(left, layers[i].rates.target)
            out[i] = max(share, 0)
            left -= out[i]
        }
        return out
    }
}
