// The Linux audio device module on libpulse. Chosen over SDL2's audio (already linked for
// windows) because the echo path needs what only the sound server knows: each stream's real
// latency (pa_simple_get_latency), the monitor sources of outputs (a sink's monitor is the
// microphone of the echo test), and named sinks and sources to list and pick; SDL2 hides all
// three behind its own buffering. PipeWire serves the same API through pipewire-pulse.
internal import CPulse

/// PulseAudio: devices listed through the introspection API, streams through pa_simple (its
/// blocking calls run on the pipeline's own audio threads, so no C callback needs Swift state).
public struct PulseAudioDeviceModule: AudioDeviceModule {
    /// nil: the default server ($PULSE_SERVER, else the user's or the system socket).
    public let server: String?
    public let applicationName: String

    public init(server: String? = nil, applicationName: String = "swiftrtc") {
        self.server = server
        self.applicationName = applicationName
    }

    public func inputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        try PulseIntrospection.list(server: server, name: applicationName).filter { $0.kind == .input }
    }

    public func outputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        try PulseIntrospection.list(server: server, name: applicationName).filter { $0.kind == .output }
    }

    public func openCapture(device: String?, format: AudioStreamFormat) throws(AudioDeviceError) -> any AudioCaptureStream {
        try PulseSimpleStream(server: server, name: applicationName, direction: .record, device: device, format: format)
    }

    public func openPlayout(device: String?, format: AudioStreamFormat) throws(AudioDeviceError) -> any AudioPlayoutStream {
        try PulseSimpleStream(server: server, name: applicationName, direction: .playback, device: device, format: format)
    }
}

/// One round of introspection on a private mainloop: server defaults, sinks, sources.
enum PulseIntrospection {
    /// What the C callbacks fill in; they cannot capture, so it travels as their userdata.
    private final class Listing {
        var devices: [AudioDeviceInfo] = []
        var defaultSink = "", defaultSource = ""
    }

    static func list(server: String?, name: String) throws(AudioDeviceError) -> [AudioDeviceInfo] {
        guard let loop = pa_mainloop_new() else { throw .serverUnavailable("pa_mainloop_new failed") }
        defer { pa_mainloop_free(loop) }
        guard let context = pa_context_new(pa_mainloop_get_api(loop), name) else {
            throw .serverUnavailable("pa_context_new failed")
        }
        defer { pa_context_unref(context) }
        if pa_context_connect(context, server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
            throw .serverUnavailable(errorText(pa_context_errno(context)))
        }
        defer { pa_context_disconnect(context) }
        while true {
            let state = pa_context_get_state(context)
            if state == PA_CONTEXT_READY { break }
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
                throw .serverUnavailable(errorText(pa_context_errno(context)))
            }
            if pa_mainloop_iterate(loop, 1, nil) < 0 { throw .serverUnavailable("mainloop failed while connecting") }
        }
        let listing = Listing()
        let userdata = Unmanaged.passUnretained(listing).toOpaque()
        try wait(loop, pa_context_get_server_info(context, { _, info, userdata in
            guard let info, let userdata else { return }
            let l = Unmanaged<Listing>.fromOpaque(userdata).takeUnretainedValue()
            if let s = info.pointee.default_sink_name { l.defaultSink = String(cString: s) }
            if let s = info.pointee.default_source_name { l.defaultSource = String(cString: s) }
        }, userdata))
        try wait(loop, pa_context_get_sink_info_list(context, { _, info, eol, userdata in
            guard eol == 0, let info, let userdata, let name = info.pointee.name else { return }
            Unmanaged<Listing>.fromOpaque(userdata).takeUnretainedValue().devices.append(PulseIntrospection.device(
                name, info.pointee.description, info.pointee.sample_spec, kind: .output, isMonitor: false))
        }, userdata))
        try wait(loop, pa_context_get_source_info_list(context, { _, info, eol, userdata in
            guard eol == 0, let info, let userdata, let name = info.pointee.name else { return }
            Unmanaged<Listing>.fromOpaque(userdata).takeUnretainedValue().devices.append(PulseIntrospection.device(
                name, info.pointee.description, info.pointee.sample_spec, kind: .input,
                isMonitor: info.pointee.monitor_of_sink != UInt32.max))
        }, userdata))
        return listing.devices.map { d in
            var d = d
            d.isDefault = d.id == (d.kind == .output ? listing.defaultSink : listing.defaultSource)
            return d
        }
    }

    fileprivate static func device(_ name: UnsafePointer<CChar>, _ description: UnsafePointer<CChar>?, _ spec: pa_sample_spec,
                               kind: AudioDeviceInfo.Kind, isMonitor: Bool) -> AudioDeviceInfo {
        let id = String(cString: name)
        return AudioDeviceInfo(id: id, name: description.map { String(cString: $0) } ?? id, kind: kind, isMonitor: isMonitor,
                               sampleRate: Int(spec.rate), channels: Int(spec.channels))
    }

    private static func wait(_ loop: OpaquePointer, _ operation: OpaquePointer?) throws(AudioDeviceError) {
        guard let operation else { throw .serverUnavailable("introspection request failed") }
        defer { pa_operation_unref(operation) }
        while pa_operation_get_state(operation) == PA_OPERATION_RUNNING {
            if pa_mainloop_iterate(loop, 1, nil) < 0 { throw .serverUnavailable("mainloop failed while listing") }
        }
    }

    static func errorText(_ code: Int32) -> String {
        pa_strerror(code).map { String(cString: $0) } ?? "error \(code)"
    }
}
