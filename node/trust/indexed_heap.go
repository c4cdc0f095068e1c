package trust

// indexedHeap is a container/heap whose items each know their index, so a
// book can take one out of the middle (heap.Remove) when it leaves by
// another way (a bound of its own, the store).
type indexedHeap[T heapItem] struct {
	items []T
	less  func(a, b T) bool
}

// heapItem is an item of an indexedHeap: slot is where it keeps its
// index, -1 when it is not in the heap.
type heapItem interface{ slot() *int }

func (q *indexedHeap[T]) Len() int           { return len(q.items) }
func (q *indexedHeap[T]) Less(i, j int) bool { return q.less(q.items[i], q.items[j]) }

func (q *indexedHeap[T]) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	*q.items[i].slot(), *q.items[j].slot() = i, j
}

func (q *indexedHeap[T]) Push(x any) {
	h := x.(T)
	*h.slot() = len(q.items)
	q.items = append(q.items, h)
}

func (q *indexedHeap[T]) Pop() any {
	last := q.items[len(q.items)-1]
	var none T
	q.items[len(q.items)-1] = none
	q.items = q.items[:len(q.items)-1]
	*last.slot() = -1
	return last
}
