import HTTP
import Relay

extension Simulation {
    /// One request to an in-process relay as its HTTP server would hand it over: the request
    /// written as on the wire (`target` percent-encoded as a client sends it), read back by
    /// `HTTPRequestDecoder` (path and query decoded, header fields checked), then given to
    /// `relay.handle`. For requests whose target the parser must decode; `request` passes the
    /// target through as it is.
    public func wireRequest(_ relay: RelayServer, _ method: String, _ target: String, body: [UInt8] = [],
                            headers: HTTPHeaders = [], client: String = "10.0.0.200:40000") async throws -> HTTPResponse {
        var all = headers
        if all["Host"] == nil { all.add("Host", "127.0.0.1") }
        if !body.isEmpty || method == "POST" || method == "PATCH" { all.set("Content-Length", String(body.count)) }
        let head = "\(method) \(target) HTTP/1.1\r\n" + all.map { "\($0.name): \($0.value)\r\n" }.joined() + "\r\n"
        var decoder = HTTPRequestDecoder(remoteAddress: client)
        decoder.append(Array(head.utf8) + body)
        guard case .request(let request) = try decoder.next() else {
            throw SimulationError("\(method) \(target): the decoder did not make a whole request of it")
        }
        return await relay.handle(request)
    }
}

extension HTTPResponse {
    /// The body as UTF-8 text (invalid sequences replaced), as `HTTPClientResponse.text` reads it.
    public var bodyString: String { String(decoding: body, as: UTF8.self) }
}
