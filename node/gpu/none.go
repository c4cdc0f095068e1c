package gpu

import (
	"context"
)

// None is the backend of a host without GPUs: zero devices, no samples, no
// events. It is what "auto" falls back to when NVML is unavailable.
type None struct{}

var _ Backend = None{}

// NewNone returns the none backend.
func NewNone() None { return None{} }

func (None) Name() string { return BackendNone }

func (None) Devices() ([]Device, error) { return nil, nil }

func (None) Sample(ctx context.Context) ([]Sample, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, nil
}

// Events returns a channel that never carries an event and closes when ctx
// is done, so consumers can treat every backend the same way.
func (None) Events(ctx context.Context) (<-chan Event, error) {
	ch := make(chan Event)
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch, nil
}

func (None) Close() error { return nil }
