/// libFuzzer entry (`swiftrtc-fuzz`, target `videopayload`): what the relay reads off every
/// publisher video packet before forwarding it — H.264's temporal layer (`H264TemporalReader`)
/// and VP8's payload descriptor — never traps, and what it says is consistent.
public func fuzzVideoPayload(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { raw in
        if let mark = H264TemporalReader.mark(raw) {
            precondition(mark.layer <= 1, "H.264 layer \(mark.layer) from nal_ref_idc")
            precondition(mark.sync == (mark.layer == 1), "a non-referenced picture is a sync, a referenced one not")
            precondition(!raw.isEmpty && (raw[0] & 0x60 == 0) == (mark.layer == 1), "layer disagrees with nal_ref_idc")
        }
        if let (descriptor, size) = try? VP8PayloadDescriptor.parse(raw) {
            precondition(size >= 1 && size <= raw.count, "VP8 descriptor of \(size) bytes in \(raw.count)")
            let again = try? VP8PayloadDescriptor.parse(descriptor.serialize())
            precondition(again?.0 == descriptor, "a VP8 descriptor does not survive serialize and parse")
        }
    }
}
