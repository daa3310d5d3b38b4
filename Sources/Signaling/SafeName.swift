/// The one character set for names that come from URLs and end up in logs and keys (signaling
/// rooms and their keys, relay apps and streams): ASCII letters, digits, `-`, `_` or `.`; 1–64 of
/// them unless said otherwise.
public enum SafeName {
    public static func isValid(_ name: String, lengths: ClosedRange<Int> = 1...64) -> Bool {
        lengths.contains(name.utf8.count) && name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2d || c == 0x5f || c == 0x2e
        }
    }
}
