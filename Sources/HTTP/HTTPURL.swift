// `http://` and `https://` URLs for the client, and reference resolution (RFC 3986 §5.2) for redirects.

/// An `http(s)://host[:port]/path?query` URL split for sending.
struct HTTPURL: Sendable, Equatable {
    /// `http` or `https`.
    var scheme: String
    /// Host without brackets, as given to the resolver.
    var host: String
    var port: UInt16
    /// Host header value: the URL's authority (with brackets for IPv6, port only when not the
    /// scheme's default).
    var authority: String
    /// Path and query, at least `/`.
    var target: String

    /// `host:port` as used in error messages.
    var display: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    var string: String { "\(scheme)://\(authority)\(target)" }
    var isTLS: Bool { scheme == "https" }

    static func parse(_ text: String) throws(HTTPError) -> HTTPURL {
        if text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            throw HTTPError(.invalidURL, "URL contains a space or control character: \(HeadParsing.quote(Array(text.utf8)))")
        }
        guard let schemeEnd = text.range(of: "://") else {
            throw HTTPError(.invalidURL, "not an absolute http:// or https:// URL: \(HeadParsing.quote(Array(text.utf8)))")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw HTTPError(.invalidURL, "unsupported URL scheme \"\(scheme)\" in \(text)")
        }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if let hash = target.firstIndex(of: "#") { target = String(target[..<hash]) }
        if !target.hasPrefix("/") { target = "/" + target }
        if authority.contains("@") {
            throw HTTPError(.invalidURL, "user information in URLs is not supported: \(text)")
        }

        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw HTTPError(.invalidURL, "unterminated IPv6 address in \(text)")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw HTTPError(.invalidURL, "bad port in \(text)") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw HTTPError(.invalidURL, "no host in \(text)") }
        let defaultPort: UInt16 = scheme == "https" ? 443 : 80
        var port = defaultPort
        if let portText, !portText.isEmpty {
            guard portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber), let value = UInt16(portText), value > 0 else {
                throw HTTPError(.invalidURL, "bad port \"\(portText)\" in \(text)")
            }
            port = value
        }
        let hostText = host.lowercased()
        let bracketed = hostText.contains(":") ? "[\(hostText)]" : hostText
        return HTTPURL(scheme: scheme, host: hostText, port: port,
                       authority: port == defaultPort ? bracketed : "\(bracketed):\(port)", target: target)
    }
}

/// RFC 3986 reference resolution.
enum URIResolution {
    struct Parts {
        var scheme: Substring?
        var authority: Substring?
        var path: Substring
        var query: Substring?
        var fragment: Substring?
    }

    /// Splits a URI reference into its five components (RFC 3986 §3, appendix B).
    static func split(_ text: String) -> Parts {
        var rest = Substring(text)
        var scheme: Substring?
        if let colon = rest.firstIndex(of: ":"),
           !rest[..<colon].contains(where: { $0 == "/" || $0 == "?" || $0 == "#" }),
           let first = rest.first, first.isASCII, first.isLetter,
           rest[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }) {
            scheme = rest[..<colon]
            rest = rest[rest.index(after: colon)...]
        }
        var fragment: Substring?
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        var query: Substring?
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        var authority: Substring?
        if rest.hasPrefix("//") {
            let afterSlashes = rest.dropFirst(2)
            let end = afterSlashes.firstIndex(of: "/") ?? afterSlashes.endIndex
            authority = afterSlashes[..<end]
            rest = afterSlashes[end...]
        }
        return Parts(scheme: scheme, authority: authority, path: rest, query: query, fragment: fragment)
    }

    static func resolve(_ reference: String, against base: String) -> String? {
        let b = split(base)
        guard b.scheme != nil else { return nil }
        let r = split(reference)
        var t = Parts(scheme: nil, authority: nil, path: "", query: nil, fragment: r.fragment)
        if r.scheme != nil {
            t.scheme = r.scheme
            t.authority = r.authority
            t.path = Substring(removeDotSegments(String(r.path)))
            t.query = r.query
        } else {
            t.scheme = b.scheme
            if r.authority != nil {
                t.authority = r.authority
                t.path = Substring(removeDotSegments(String(r.path)))
                t.query = r.query
            } else {
                t.authority = b.authority
                if r.path.isEmpty {
                    t.path = b.path
                    t.query = r.query ?? b.query
                } else {
                    if r.path.hasPrefix("/") {
                        t.path = Substring(removeDotSegments(String(r.path)))
                    } else {
                        t.path = Substring(removeDotSegments(merge(base: b, path: r.path)))
                    }
                    t.query = r.query
                }
            }
        }
        var out = ""
        if let scheme = t.scheme { out += scheme + ":" }
        if let authority = t.authority { out += "//" + authority }
        out += t.path
        if let query = t.query { out += "?" + query }
        if let fragment = t.fragment { out += "#" + fragment }
        return out
    }

    /// RFC 3986 §5.2.3.
    static func merge(base: Parts, path: Substring) -> String {
        if base.authority != nil && base.path.isEmpty { return "/" + path }
        guard let slash = base.path.lastIndex(of: "/") else { return String(path) }
        return String(base.path[...slash]) + path
    }

    /// RFC 3986 §5.2.4, over whole segments.
    static func removeDotSegments(_ path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []  // each element is "/segment" or a leading "segment"
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                if !output.isEmpty { output.removeLast() }
            } else if input == "/.." {
                input = "/"
                if !output.isEmpty { output.removeLast() }
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let searchFrom = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[searchFrom...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }
}
