//go:build cgo && linux

package gpu

import (
	"context"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Events registers every device that supports XID events on a new EventSet
// and forwards XIDs until ctx is done or the backend closes. Without event
// support (old driver, vGPU, some consumer boards) the channel stays silent
// and closes the same way: NVML has no call to poll past XIDs, so there is
// nothing to fall back to, and the caller sees lost GPUs through Sample.
func (n *NVML) Events(ctx context.Context) (<-chan Event, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		return nil, fmt.Errorf("gpu: nvml events: %w", ErrClosed)
	}
	ch := make(chan Event, 16)
	if !n.sym.events {
		n.log.Info("gpu: nvml has no event sets, xids will not be reported")
		n.silent(ctx, ch)
		return ch, nil
	}
	set, ret := n.lib.EventSetCreate()
	if ret == nvml.ERROR_NOT_SUPPORTED {
		n.log.Info("gpu: nvml event sets not supported, xids will not be reported")
		n.silent(ctx, ch)
		return ch, nil
	}
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("gpu: nvml EventSetCreate: %w", ret)
	}
	registered := 0
	for _, d := range n.devices {
		supported, ret := d.h.GetSupportedEventTypes()
		if ret != nvml.SUCCESS {
			n.log.Info("gpu: nvml no event types", "index", d.index, "uuid", d.uuid, "err", ret)
			continue
		}
		mask := supported & nvml.EventTypeXidCriticalError
		if mask == 0 {
			continue
		}
		if ret := d.h.RegisterEvents(mask, set); ret != nvml.SUCCESS {
			n.log.Warn("gpu: nvml RegisterEvents failed", "index", d.index, "uuid", d.uuid, "err", ret)
			continue
		}
		registered++
	}
	if registered == 0 {
		if ret := set.Free(); ret != nvml.SUCCESS {
			n.log.Warn("gpu: nvml EventSet Free", "err", ret)
		}
		n.log.Info("gpu: no device supports xid events")
		n.silent(ctx, ch)
		return ch, nil
	}
	n.wg.Add(1)
	go n.watch(ctx, set, ch)
	return ch, nil
}

// silent closes ch when ctx is done or the backend closes.
func (n *NVML) silent(ctx context.Context, ch chan Event) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer close(ch)
		select {
		case <-ctx.Done():
		case <-n.done:
		}
	}()
}

func (n *NVML) watch(ctx context.Context, set nvml.EventSet, ch chan Event) {
	defer n.wg.Done()
	defer close(ch)
	defer func() {
		// Close waits for this goroutine, so Free runs before Shutdown.
		if ret := set.Free(); ret != nvml.SUCCESS {
			n.log.Warn("gpu: nvml EventSet Free", "err", ret)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.done:
			return
		default:
		}
		// Wait blocks in C for up to waitMS; that bounds how long a cancel
		// or Close takes to be noticed.
		data, ret := set.Wait(n.waitMS)
		switch ret {
		case nvml.SUCCESS:
			if data.EventType&nvml.EventTypeXidCriticalError == 0 {
				continue
			}
			ev := Event{Time: n.now(), UUID: n.uuidOf(data.Device), XID: data.EventData}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			case <-n.done:
				return
			}
		case nvml.ERROR_TIMEOUT:
		default:
			// A failing Wait returns at once; back off instead of spinning.
			n.log.Warn("gpu: nvml EventSet Wait", "err", ret)
			select {
			case <-ctx.Done():
				return
			case <-n.done:
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// uuidOf maps an event's device handle to its UUID without another NVML
// call, which would fail on the lost GPU the event is often about.
func (n *NVML) uuidOf(h nvml.Device) string {
	if h == nil {
		return ""
	}
	for _, d := range n.devices {
		if d.h == h {
			return d.uuid
		}
	}
	if uuid, ret := h.GetUUID(); ret == nvml.SUCCESS {
		return uuid
	}
	return ""
}
