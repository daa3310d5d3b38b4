import Media

extension CameraCapturer {
    /// One frame from the current stream: converted to the output format, mirrored when asked,
    /// tagged with the rotation and the faces in view, handed to photo waiters and the delegate;
    /// every tenth frame is metered for the exposure policy's brightness table.
    func deliver(_ raw: VideoFrame, generation: UInt64) {
        let (current, delegate, meter, look) = framePath.withLock { p -> (Bool, (any VideoCapturerDelegate)?, Bool, Look) in
            let look = Look(rotation: p.rotation, mirror: p.mirror.mirrors(p.position), format: p.outputFormat)
            guard p.generation == generation else { return (false, nil, false, look) }
            p.framesDelivered &+= 1
            let meter = !(p.policy?.bands.isEmpty ?? true) && !p.policyPending && p.framesDelivered % 10 == 0
            return (true, p.delegate, meter, look)
        }
        guard current else { return }
        var upright = raw
        upright.rotation = look.rotation
        let faces = findFaces(in: upright, generation: generation)
        var frame = transform(raw, look)
        frame.faces = look.mirror ? faces?.map(\.mirrored) : faces
        let waiters = framePath.withLock { p in
            p.lastFrameSize = (frame.width, frame.height)
            defer { p.photoWaiters = [] }
            return p.photoWaiters
        }
        for w in waiters { w.continuation.resume(returning: frame) }
        if meter { meterExposure(frame) }
        delegate?.capturer(self, didCapture: frame)
    }

    /// Output format, mirroring (left-right as the viewer sees it: when the frame will be shown
    /// turned by 90° or 270°, that is top-bottom in the buffer) and rotation, in at most two passes.
    func transform(_ raw: VideoFrame) -> VideoFrame {
        transform(raw, framePath.withLock { Look(rotation: $0.rotation, mirror: $0.mirror.mirrors($0.position), format: $0.outputFormat) })
    }

    /// How frames leave the capturer now, read once per frame.
    struct Look {
        var rotation: VideoRotation
        var mirror: Bool
        var format: PixelFormat
    }

    private func transform(_ raw: VideoFrame, _ look: Look) -> VideoFrame {
        var buffer = raw.buffer.converted(to: look.format)   // no copy when it already is
        if look.mirror {
            buffer = look.rotation.swapsDimensions ? buffer.flippedVertically() : buffer.mirrored()
        }
        return VideoFrame(buffer: buffer, rotation: look.rotation, timestampNs: raw.timestampNs)
    }

    private func meterExposure(_ frame: VideoFrame) {
        guard frame.format != .bgra else { return }
        let b = frame.buffer
        let luma = BrightnessMeter.meanLuma(UnsafePointer(b.planePointer(0)), stride: b.strides[0], width: b.width, height: b.height)
        let (policy, band, exposure) = framePath.withLock { ($0.policy, $0.policyBand, $0.exposure) }
        guard let policy else { return }
        let e = exposure?() ?? (iso: 100, duration: 1.0 / 30)
        let bv = BrightnessMeter.brightnessValue(meanLuma: luma, iso: e.iso, duration: e.duration)
        let next = policy.band(for: bv, current: band)
        guard next != band else { return }
        framePath.withLock { $0.policyPending = true }
        let controller = self.controller
        Task { await controller.applyPolicy(band: next, brightness: bv, policy: policy) }
    }
}
