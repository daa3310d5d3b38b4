/// Reusable working memory for per-frame filters: grows when a bigger frame comes, never shrinks,
/// so steady-state processing allocates nothing. Not thread-safe; owners guard it with a lock.
final class ScratchBuffer<Element: BitwiseCopyable> {
    private(set) var pointer: UnsafeMutablePointer<Element>
    private(set) var capacity: Int

    init() {
        capacity = 0
        pointer = UnsafeMutablePointer<Element>.allocate(capacity: 1)
    }

    /// Memory for at least `count` elements (contents undefined after growing).
    func reserve(_ count: Int) -> UnsafeMutablePointer<Element> {
        if count > capacity {
            pointer.deallocate()
            pointer = UnsafeMutablePointer<Element>.allocate(capacity: max(count, 1))
            capacity = count
        }
        return pointer
    }

    deinit { pointer.deallocate() }
}
