#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Media

/// A file opened for writing with POSIX calls, so every failure comes back as an error with
/// errno's text instead of a trap. Used from one queue at a time.
final class FileOutput {
    let path: String
    private var fd: Int32

    init(path: String, truncate: Bool = true) throws(MediaError) {
        self.path = path
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0)
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw MediaError("cannot open \(path) for writing: \(FileOutput.errnoText())") }
        self.fd = fd
    }

    deinit { if fd >= 0 { _ = posixClose(fd) } }

    /// Writes all of `bytes` (retrying short writes and EINTR).
    func write(_ bytes: UnsafeRawBufferPointer) throws(MediaError) {
        guard fd >= 0 else { throw MediaError("write to closed file \(path)") }
        guard var p = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let n = posixWrite(fd, p, left)
            if n < 0 {
                if errno == EINTR { continue }
                throw MediaError("write to \(path) failed: \(FileOutput.errnoText())")
            }
            if n == 0 { throw MediaError("write to \(path) wrote nothing (disk full?)") }
            p += n
            left -= n
        }
    }

    func write(_ bytes: [UInt8]) throws(MediaError) {
        // withUnsafeBytes is `rethrows`, so the typed error is recovered with a cast.
        do {
            try bytes.withUnsafeBytes { raw in try write(raw) }
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError("write to \(path) failed: \(error)")
        }
    }

    /// Closes the file; close() can report a deferred write error (NFS, quota).
    func close() throws(MediaError) {
        guard fd >= 0 else { return }
        let r = posixClose(fd)
        fd = -1
        if r != 0 { throw MediaError("closing \(path) failed: \(FileOutput.errnoText())") }
    }

    static func errnoText() -> String {
        let code = errno
        return String(cString: strerror(code)) + " (errno \(code))"
    }

    /// Writes a whole file atomically: a temporary file next to it, then rename.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(MediaError) {
        let tmp = path + ".tmp"
        let out = try FileOutput(path: tmp)
        do {
            try out.write(bytes)
            try out.close()
        } catch {
            unlink(tmp)
            throw error
        }
        guard rename(tmp, path) == 0 else {
            let text = errnoText()
            unlink(tmp)
            throw MediaError("cannot rename \(tmp) to \(path): \(text)")
        }
    }
}

// The module-qualified names differ between Glibc and Darwin; these keep the class free of #if.
private func posixWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(fd, p, n)
    #else
    return Darwin.write(fd, p, n)
    #endif
}

private func posixClose(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
    return Glibc.close(fd)
    #else
    return Darwin.close(fd)
    #endif
}
