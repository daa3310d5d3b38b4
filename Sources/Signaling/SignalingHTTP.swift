import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTP

/// One request/response for the signaling clients: `http://` through our own HTTPClient,
/// `https://` through URLSession (libcurl), which always verifies the server's certificate —
/// the reference app trusted every certificate silently; we don't. (Accepting a self-signed
/// certificate on request needs a TLS client of our own: curl-based URLSession cannot.)
struct SignalingHTTP: Sendable {
    var timeout: Duration

    struct Response: Sendable {
        var status: Int
        var reason: String
        var headers: HTTPHeaders
        var body: [UInt8]
        var finalURL: String
    }

    func send(method: String, url: String, headers: HTTPHeaders = [], body: [UInt8] = []) async throws -> Response {
        if url.hasPrefix("http://") {
            let r = try await HTTPClient(timeout: timeout).send(method: method, url: url, headers: headers, body: body)
            return Response(status: r.status, reason: r.reason, headers: r.headers, body: r.body, finalURL: r.finalURL)
        }
        guard url.hasPrefix("https://"), let target = URL(string: url) else {
            throw SignalingError("\(url): only http:// and https:// URLs are supported")
        }
        var request = URLRequest(url: target)
        request.httpMethod = method
        request.timeoutInterval = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        for (name, value) in headers { request.addValue(value, forHTTPHeaderField: name) }
        if !body.isEmpty { request.httpBody = Data(body) }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await session.data(for: request)
        } catch let error as URLError where [.serverCertificateUntrusted, .serverCertificateHasUnknownRoot,
                                               .serverCertificateHasBadDate, .secureConnectionFailed].contains(error.code) {
            throw SignalingError("\(url): the server's certificate was not accepted (\(error.localizedDescription))")
        } catch {
            throw SignalingError("\(url): \(error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse else { throw SignalingError("\(url): not an HTTP response") }
        var out = HTTPHeaders()
        for (k, v) in http.allHeaderFields { out.add("\(k)", "\(v)") }
        return Response(status: http.statusCode, reason: HTTPURLResponse.localizedString(forStatusCode: http.statusCode),
                        headers: out, body: Array(data), finalURL: http.url?.absoluteString ?? url)
    }
}
