package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/api/client"
)

// forwardFake is a backend that forwards: it records forwards by port.
type forwardFake struct {
	*fakeBackend
	mu sync.Mutex
	fs map[uint16]api.Forward
}

func (f *forwardFake) StartForward(job string, req api.ForwardRequest) (api.Forward, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.fs[req.Port]; ok {
		return api.Forward{}, api.Errorf(http.StatusConflict, "conflict", "port %d already forwarded", req.Port)
	}
	fw := api.Forward{Job: job, Port: req.Port, Listen: fmt.Sprintf("127.0.0.1:%d", 40000+int(req.Port)%1000)}
	f.fs[req.Port] = fw
	return fw, nil
}

func (f *forwardFake) StopForward(_ string, port uint16) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.fs[port]; !ok {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "port %d not forwarded", port)
	}
	delete(f.fs, port)
	return nil
}

func (f *forwardFake) Forwards(string) ([]api.Forward, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []api.Forward{}
	for _, fw := range f.fs {
		out = append(out, fw)
	}
	return out, nil
}

func serveBackend(t *testing.T, b api.Backend) *client.Client {
	t.Helper()
	s, err := api.Listen("127.0.0.1:0", b, api.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return client.New(s.URL(), token)
}

func TestForwardRoutes(t *testing.T) {
	c := serveBackend(t, &forwardFake{fakeBackend: &fakeBackend{}, fs: map[uint16]api.Forward{}})
	ctx := t.Context()
	fw, err := c.StartForward(ctx, "job1", api.ForwardRequest{Listen: "127.0.0.1:0", Port: 8080})
	if err != nil || fw.Port != 8080 || fw.Job != "job1" {
		t.Fatalf("start: %+v %v", fw, err)
	}
	var ae *api.Error
	if _, err := c.StartForward(ctx, "job1", api.ForwardRequest{Port: 8080}); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Errorf("second start: %v", err)
	}
	if _, err := c.StartForward(ctx, "job1", api.ForwardRequest{}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Errorf("port 0: %v", err)
	}
	if fs, err := c.Forwards(ctx, "job1"); err != nil || len(fs) != 1 {
		t.Errorf("list: %+v %v", fs, err)
	}
	if err := c.StopForward(ctx, "job1", 8080); err != nil {
		t.Fatal(err)
	}
	if err := c.StopForward(ctx, "job1", 8080); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("second stop: %v", err)
	}
	// A backend that does not forward answers 404.
	plain := serveBackend(t, &fakeBackend{})
	if _, err := plain.Forwards(ctx, "job1"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("plain backend: %v", err)
	}
}
