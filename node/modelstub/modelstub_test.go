package modelstub_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/idlegrid/idlegrid/node/executor/docker/dockertest"
	"github.com/idlegrid/idlegrid/node/modelstub"
)

// checkServer asks base for a completion streamed and not, and checks
// the tokens and usage against the ground truth.
func checkServer(t *testing.T, base string) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %s", resp.Status)
	}
	resp, err = http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a b c","max_tokens":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Choices []struct{ Text string }
		Usage   modelstub.Usage
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || v.Choices[0].Text != "t0 t1 t2 " || v.Usage != (modelstub.Usage{PromptTokens: 3, CompletionTokens: 3, TotalTokens: 6}) {
		t.Fatalf("completion %+v, %v", v, err)
	}
	resp, err = http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi there you"}],"max_tokens":5,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var text strings.Builder
	var usage *modelstub.Usage
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var c struct {
			Choices []struct{ Delta struct{ Content string } }
			Usage   *modelstub.Usage
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
	}
	if !done || text.String() != "t0 t1 t2 t3 t4 " || usage == nil || *usage != (modelstub.Usage{PromptTokens: 5, CompletionTokens: 5, TotalTokens: 10}) {
		t.Fatalf("stream: done %v, text %q, usage %+v", done, text.String(), usage)
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(modelstub.Handler(modelstub.Config{Name: "x", TokenDelay: time.Millisecond}))
	defer srv.Close()
	checkServer(t, srv.URL)
	resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"max_tokens":100000}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("max_tokens over the bound: %s", resp.Status)
	}
}

// TestImage builds the server static into a FROM-scratch image, runs it
// on the Docker engine and checks it answers as the handler does.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program and an image: not in -short")
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if _, err := cli.ServerVersion(ctx); err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	tag, _, err := dockertest.BuildScratchImage(ctx, cli, "./testdata/server", "server", "idlegrid-test/modelstub")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	}()
	port := nat.Port("8080/tcp")
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: tag, Env: []string{"NAME=img", "TOKEN_DELAY=1ms"}, ExposedPorts: nat.PortSet{port: {}}},
		&container.HostConfig{PortBindings: nat.PortMap{port: {{HostIP: "127.0.0.1", HostPort: "0"}}}}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) }()
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ins, err := cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	bound := ins.NetworkSettings.Ports[port]
	if len(bound) == 0 {
		t.Fatal("port 8080 not published")
	}
	base := fmt.Sprintf("http://127.0.0.1:%s", bound[0].HostPort)
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container never answered: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkServer(t, base)
}
