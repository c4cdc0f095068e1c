package provider

// wakeup wakes one loop: any number of notifies before the loop looks
// count as one, and a notify never blocks its caller.
type wakeup chan struct{}

func newWakeup() wakeup { return make(wakeup, 1) }

// notify asks the loop for another round.
func (w wakeup) notify() {
	select {
	case w <- struct{}{}:
	default:
	}
}
