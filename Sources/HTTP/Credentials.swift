// Bearer tokens (RFC 6750 §2.1) as servers read them, and comparing secrets without telling how
// much of them matched.
import Foundation

public enum Credentials {
    /// The token of an `Authorization: Bearer T` header (scheme case-insensitive, spaces around
    /// T dropped); nil without one.
    public static func bearer(_ headers: HTTPHeaders) -> String? {
        guard let auth = headers["Authorization"], auth.count > 7, auth.prefix(7).lowercased() == "bearer " else { return nil }
        let token = auth.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Whether `presented` is `required`, in time that depends only on the length of `required`.
    public static func matches(_ presented: String, _ required: String) -> Bool {
        let x = Array(presented.utf8), y = Array(required.utf8)
        var diff = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<y.count { diff |= (i < x.count ? x[i] : 0) ^ y[i] }
        return diff == 0
    }
}
