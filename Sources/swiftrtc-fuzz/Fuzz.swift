import Foundation
import HTTP
import Render
import RTP
import RTPMedia
import SCTP
import SDP
import STUN
import TURN
import Transport
import WebSocket

// libFuzzer entry for the wire parsers. One binary; SWIFTRTC_FUZZ_TARGET picks the parser
// (sdp, sdpfrag — WHIP/WHEP trickle PATCH bodies, stun, rtp, rtcp, http, jpeg — a camera's MJPEG frames, websocket, dcep — data channel open/ack, turn, mux — the shared UDP socket's routing under spoofing, netlink — the kernel's address messages, videopayload — H.264's temporal layer and VP8's descriptor as the relay reads them). Built with -sanitize=fuzzer -DFUZZING by `make fuzz`;
// a normal build replays files given as arguments (regression runs of saved crashes).

nonisolated(unsafe) let fuzzTarget: ([UInt8]) -> Void = {
    switch ProcessInfo.processInfo.environment["SWIFTRTC_FUZZ_TARGET"] ?? "" {
    case "sdp": return fuzzSDP
    case "sdpfrag": return fuzzSDPFragment
    case "stun": return fuzzSTUN
    case "rtp": return fuzzRTP
    case "rtcp": return fuzzRTCP
    case "http": return fuzzHTTPRequest
    case "jpeg": return fuzzJPEG
    case "websocket": return fuzzWebSocket
    case "dcep": return fuzzDCEP
    case "turn": return fuzzTURN
    case "mux": return fuzzMuxRouting
    case "netlink": return fuzzNetlinkAddresses
    case "videopayload": return fuzzVideoPayload
    default:
        FileHandle.standardError.write(Data("set SWIFTRTC_FUZZ_TARGET to sdp, sdpfrag, stun, rtp, rtcp, http, jpeg, websocket, dcep, turn, mux, netlink or videopayload\n".utf8))
        exit(2)
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    fuzzTarget(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

#if FUZZING
// libFuzzer's driver, started from our own main: SwiftPM renames an executable's entry point,
// so libFuzzer's `main` cannot be the one that runs.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32
#endif

@main
struct FuzzMain {
    static func main() {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, { data, size in fuzzOne(data, size) }))
        #else
        for path in CommandLine.arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                exit(1)
            }
            fuzzTarget(Array(data))
            print("ok \(path)")
        }
        #endif
    }
}
