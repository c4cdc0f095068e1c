//go:build cgo && linux

package gpu

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// scriptedEventSet is a mock EventSet whose Wait returns queued events and
// ERROR_TIMEOUT otherwise, without sleeping.
func scriptedEventSet(queue <-chan nvml.EventData, freed *atomic.Int32) *mock.EventSet {
	return &mock.EventSet{
		WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
			select {
			case e := <-queue:
				return e, nvml.SUCCESS
			default:
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
		},
		FreeFunc: func() nvml.Return { freed.Add(1); return nvml.SUCCESS },
	}
}

func TestNVMLEvents(t *testing.T) {
	srv := newMockServer(t)
	queue := make(chan nvml.EventData, 4)
	var freed atomic.Int32
	var registered atomic.Int32
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return scriptedEventSet(queue, &freed), nvml.SUCCESS }
	for i := range srv.Devices {
		d := mockDevice(srv, i)
		d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
			if i == 7 {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.EventTypeXidCriticalError | nvml.EventTypeSingleBitEccError, nvml.SUCCESS
		}
		d.RegisterEventsFunc = func(mask uint64, _ nvml.EventSet) nvml.Return {
			if mask != nvml.EventTypeXidCriticalError {
				t.Errorf("registered mask %#x, want XIDs only", mask)
			}
			registered.Add(1)
			return nvml.SUCCESS
		}
	}
	n := newTestNVML(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := n.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if registered.Load() != 7 {
		t.Fatalf("registered %d devices, want 7", registered.Load())
	}
	queue <- nvml.EventData{Device: srv.Devices[3], EventType: nvml.EventTypeSingleBitEccError} // not an XID: skipped
	queue <- nvml.EventData{Device: srv.Devices[3], EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	queue <- nvml.EventData{Device: srv.Devices[6], EventType: nvml.EventTypeXidCriticalError, EventData: 43}
	for _, want := range []Event{{UUID: "GPU-00000000-0000-0000-0000-000000000003", XID: 79}, {UUID: "GPU-00000000-0000-0000-0000-000000000006", XID: 43}} {
		ev := <-ch
		if ev.UUID != want.UUID || ev.XID != want.XID || ev.Time.IsZero() {
			t.Fatalf("event %+v, want %+v", ev, want)
		}
	}
	cancel()
	for range ch {
	}
	if freed.Load() != 1 {
		t.Fatalf("EventSet freed %d times", freed.Load())
	}
}

func TestNVMLClose(t *testing.T) {
	srv := newMockServer(t)
	var freed atomic.Int32
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return scriptedEventSet(make(chan nvml.EventData), &freed), nvml.SUCCESS
	}
	for i := range srv.Devices {
		d := mockDevice(srv, i)
		d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return nvml.EventTypeXidCriticalError, nvml.SUCCESS }
		d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	}
	n, err := NewNVML(srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.waitMS = 5
	ch, err := n.Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; ok {
		t.Fatal("event channel open after Close")
	}
	if freed.Load() != 1 || len(srv.ShutdownCalls()) != 1 {
		t.Fatalf("freed %d, shutdown %d", freed.Load(), len(srv.ShutdownCalls()))
	}
	if err := n.Close(); err != nil || len(srv.ShutdownCalls()) != 1 {
		t.Fatalf("second Close: %v, shutdown calls %d", err, len(srv.ShutdownCalls()))
	}
	if _, err := n.Sample(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sample after Close: %v", err)
	}
	if _, err := n.Devices(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Devices after Close: %v", err)
	}
}
