/// Bytes from a hex string; anything but hex digits (spaces, underscores, colons) is skipped.
public func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var high: UInt8?
    for c in s.unicodeScalars {
        guard let v = UInt8(String(c), radix: 16) else { continue }
        if let h = high {
            out.append(h << 4 | v)
            high = nil
        } else {
            high = v
        }
    }
    return out
}

/// Lowercase hex, two digits a byte.
public func toHex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
}
