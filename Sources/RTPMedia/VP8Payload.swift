import Media

/// The VP8 payload descriptor (RFC 7741 §4.2) with all optional fields.
public struct VP8PayloadDescriptor: Sendable, Equatable {
    /// N: the frame can be discarded without affecting others.
    public var nonReference: Bool
    /// S: this packet starts a partition.
    public var startOfPartition: Bool
    /// PID: partition index, 0…7.
    public var partitionIndex: UInt8
    /// I: 7-bit or 15-bit picture ID.
    public var pictureID: UInt16?
    /// M: whether `pictureID` travels in 15 bits (ignored when `pictureID` is nil).
    public var longPictureID: Bool
    /// L: TL0PICIDX.
    public var tl0PictureIndex: UInt8?
    /// T: temporal layer index, 0…3 (with Y, the layer sync bit).
    public var temporalLayerIndex: UInt8?
    public var layerSync: Bool
    /// K: temporal key frame index, 0…31.
    public var keyIndex: UInt8?

    public init(nonReference: Bool = false, startOfPartition: Bool, partitionIndex: UInt8 = 0,
                pictureID: UInt16? = nil, longPictureID: Bool = true, tl0PictureIndex: UInt8? = nil,
                temporalLayerIndex: UInt8? = nil, layerSync: Bool = false, keyIndex: UInt8? = nil) {
        self.nonReference = nonReference
        self.startOfPartition = startOfPartition
        self.partitionIndex = partitionIndex
        self.pictureID = pictureID
        self.longPictureID = longPictureID
        self.tl0PictureIndex = tl0PictureIndex
        self.temporalLayerIndex = temporalLayerIndex
        self.layerSync = layerSync
        self.keyIndex = keyIndex
    }

    /// Whether this packet begins a frame (S=1, PID=0).
    public var startsFrame: Bool { startOfPartition && partitionIndex == 0 }

    var hasExtension: Bool {
        pictureID != nil || tl0PictureIndex != nil || temporalLayerIndex != nil || keyIndex != nil
    }

    /// Encoded size in bytes.
    public var size: Int {
        guard hasExtension else { return 1 }
        var n = 2
        if pictureID != nil { n += longPictureID ? 2 : 1 }
        if tl0PictureIndex != nil { n += 1 }
        if temporalLayerIndex != nil || keyIndex != nil { n += 1 }
        return n
    }

    public func append(to out: inout [UInt8]) {
        let x: UInt8 = hasExtension ? 0x80 : 0
        out.append(x | (nonReference ? 0x20 : 0) | (startOfPartition ? 0x10 : 0) | (partitionIndex & 0x07))
        guard hasExtension else { return }
        out.append((pictureID != nil ? 0x80 : 0) | (tl0PictureIndex != nil ? 0x40 : 0)
                   | (temporalLayerIndex != nil ? 0x20 : 0) | (keyIndex != nil ? 0x10 : 0))
        if let id = pictureID {
            if longPictureID {
                out.append(0x80 | UInt8(truncatingIfNeeded: (id >> 8) & 0x7F))
                out.append(UInt8(truncatingIfNeeded: id))
            } else {
                out.append(UInt8(truncatingIfNeeded: id) & 0x7F)
            }
        }
        if let tl0 = tl0PictureIndex { out.append(tl0) }
        if temporalLayerIndex != nil || keyIndex != nil {
            out.append(((temporalLayerIndex ?? 0) & 0x03) << 6 | (layerSync ? 0x20 : 0) | ((keyIndex ?? 0) & 0x1F))
        }
    }

    public func serialize() -> [UInt8] {
        var out: [UInt8] = []
        append(to: &out)
        return out
    }

    /// Parses the descriptor at the start of `payload`; returns it and its size.
    public static func parse(_ payload: [UInt8], packetIndex: Int = 0) throws(PayloadError) -> (VP8PayloadDescriptor, size: Int) {
        try payload.withUnsafeBytes { raw in
            Result { () throws(PayloadError) in try parse(raw, packetIndex: packetIndex) }
        }.get()
    }

    /// The same, from bytes in place (a relay reads a packet it forwards without copying it).
    public static func parse(_ payload: UnsafeRawBufferPointer, packetIndex: Int = 0) throws(PayloadError) -> (VP8PayloadDescriptor, size: Int) {
        func fail(_ offset: Int, _ message: String) -> PayloadError {
            PayloadError(format: "VP8", packetIndex: packetIndex, offset: offset, message)
        }
        func byte(_ i: Int, _ what: String) throws(PayloadError) -> UInt8 {
            guard i < payload.count else { throw fail(i, "descriptor truncated: \(what) missing") }
            return payload[i]
        }
        let b0 = try byte(0, "first byte")
        var d = VP8PayloadDescriptor(nonReference: b0 & 0x20 != 0, startOfPartition: b0 & 0x10 != 0,
                                     partitionIndex: b0 & 0x07)
        var i = 1
        if b0 & 0x80 != 0 {
            let x = try byte(1, "extension byte")
            i = 2
            if x & 0x80 != 0 {
                let p = try byte(i, "PictureID")
                if p & 0x80 != 0 {
                    let lo = try byte(i + 1, "PictureID low byte")
                    d.pictureID = UInt16(p & 0x7F) << 8 | UInt16(lo)
                    d.longPictureID = true
                    i += 2
                } else {
                    d.pictureID = UInt16(p)
                    d.longPictureID = false
                    i += 1
                }
            }
            if x & 0x40 != 0 {
                d.tl0PictureIndex = try byte(i, "TL0PICIDX")
                i += 1
            }
            if x & 0x30 != 0 {
                let t = try byte(i, "TID/Y/KEYIDX")
                if x & 0x20 != 0 {
                    d.temporalLayerIndex = t >> 6
                    d.layerSync = t & 0x20 != 0
                }
                if x & 0x10 != 0 { d.keyIndex = t & 0x1F }
                i += 1
            }
        }
        return (d, i)
    }
}

/// RFC 7741 sender: X=1, I=1 with a 15-bit PictureID that increments per frame, S=1 on the
/// first packet, PID 0. Payloads are split evenly. A frame of a temporally scalable stream also
/// carries its layer (T, TID, Y), TL0PICIDX (L; counts base-layer frames, so a receiver of some
/// layers sees when a base frame is missing) and N on frames nothing references.
public struct VP8Packetizer: Sendable {
    /// The PictureID the next frame gets.
    public private(set) var pictureID: UInt16
    /// The TL0PICIDX of the last base-layer frame.
    public private(set) var tl0PictureIndex: UInt8 = 0

    public init(initialPictureID: UInt16 = 0) {
        pictureID = initialPictureID & 0x7FFF
    }

    public mutating func packetize(_ frame: EncodedFrame,
                                   maxPayloadSize: Int = RTPPayloadLimits.defaultMaxPayloadSize) -> [RTPPayload] {
        packetize(frame: frame.data, temporal: frame.temporal, maxPayloadSize: maxPayloadSize)
    }

    /// Empty input gives no payloads and keeps the PictureID. `maxPayloadSize` below 5
    /// (descriptor plus one byte) is raised to 5.
    public mutating func packetize(frame data: [UInt8], temporal: TemporalLayerInfo? = nil,
                                   maxPayloadSize: Int = RTPPayloadLimits.defaultMaxPayloadSize) -> [RTPPayload] {
        guard !data.isEmpty else { return [] }
        var descriptor = VP8PayloadDescriptor(startOfPartition: true, pictureID: pictureID, longPictureID: true)
        if let temporal {
            if temporal.layer == 0 { tl0PictureIndex &+= 1 }
            descriptor.nonReference = !temporal.isReference
            descriptor.tl0PictureIndex = tl0PictureIndex
            descriptor.temporalLayerIndex = temporal.layer
            descriptor.layerSync = temporal.sync
        }
        let capacity = max(maxPayloadSize, descriptor.size + 1) - descriptor.size
        let sizes = evenChunkSizes(total: data.count, capacity: capacity)
        var out: [RTPPayload] = []
        out.reserveCapacity(sizes.count)
        var offset = 0
        for (k, size) in sizes.enumerated() {
            descriptor.startOfPartition = k == 0
            var bytes: [UInt8] = []
            bytes.reserveCapacity(descriptor.size + size)
            descriptor.append(to: &bytes)
            bytes.append(contentsOf: data[offset..<(offset + size)])
            offset += size
            out.append(RTPPayload(bytes: bytes, marker: k == sizes.count - 1))
        }
        pictureID = (pictureID + 1) & 0x7FFF
        return out
    }
}

/// RFC 7741 receiver: payloads of one frame in sequence order → the VP8 frame.
public enum VP8Depacketizer {
    public static func depacketize(_ payloads: [[UInt8]]) throws(PayloadError) -> DepacketizedFrame {
        guard !payloads.isEmpty else { throw PayloadError(format: "VP8", packetIndex: 0, offset: 0, "no payloads") }
        var data: [UInt8] = []
        data.reserveCapacity(payloads.reduce(0) { $0 + $1.count })
        var pictureID: UInt16?
        for (index, p) in payloads.enumerated() {
            let (d, size) = try VP8PayloadDescriptor.parse(p, packetIndex: index)
            guard size < p.count else {
                throw PayloadError(format: "VP8", packetIndex: index, offset: size, "no VP8 data after the descriptor")
            }
            if index == 0 {
                guard d.startsFrame else {
                    throw PayloadError(format: "VP8", packetIndex: 0, offset: 0,
                                       "first packet has S=\(d.startOfPartition ? 1 : 0) PID=\(d.partitionIndex), not the start of partition 0")
                }
                pictureID = d.pictureID
            } else if d.startsFrame {
                throw PayloadError(format: "VP8", packetIndex: index, offset: 0, "a second frame start inside one frame")
            } else if let id = d.pictureID, let first = pictureID, id != first {
                throw PayloadError(format: "VP8", packetIndex: index, offset: 2, "PictureID \(id) differs from the frame's \(first)")
            }
            data.append(contentsOf: p[size...])
        }
        // VP8 frame tag (RFC 6386 §9.1): P bit 0 = keyframe, then start code and 14-bit sizes.
        let isKey = data[0] & 0x01 == 0
        var width = 0, height = 0
        if isKey {
            guard data.count >= 10 else {
                throw PayloadError(format: "VP8", packetIndex: 0, offset: 0, "keyframe of \(data.count) bytes is shorter than its 10-byte header")
            }
            guard data[3] == 0x9D, data[4] == 0x01, data[5] == 0x2A else {
                throw PayloadError(format: "VP8", packetIndex: 0, offset: 3, "keyframe start code is not 9d 01 2a")
            }
            width = (Int(data[6]) | Int(data[7]) << 8) & 0x3FFF
            height = (Int(data[8]) | Int(data[9]) << 8) & 0x3FFF
        }
        return DepacketizedFrame(data: data, isKeyframe: isKey, width: width, height: height, pictureID: pictureID)
    }
}
