/// A FIFO the owner drains with `poll`: appends stay O(1), the storage is reused.
struct EventQueue<Element> {
    private var items: [Element] = []
    private var head = 0

    mutating func append(_ item: Element) { items.append(item) }

    mutating func poll() -> Element? {
        guard head < items.count else { return nil }
        defer {
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            }
        }
        return items[head]
    }
}
