/// A first-in first-out queue over an array with a moving head, compacted now and then:
/// amortized O(1) without a per-packet allocation once the array has grown.
struct PacketFIFO: Sendable {
    struct Item: Sendable {
        var packet: PacedPacket
        var enqueued: Moment
    }

    private var items: [Item] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }
    var first: Item? { isEmpty ? nil : items[head] }

    mutating func append(_ item: Item) { items.append(item) }

    mutating func popFirst() -> Item? {
        guard !isEmpty else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 256 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    mutating func removeAll() {
        items.removeAll(keepingCapacity: true)
        head = 0
    }
}
