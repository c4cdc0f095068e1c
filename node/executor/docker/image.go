package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"github.com/idlegrid/idlegrid/node/executor"
)

// imageRef is a parsed Spec.Image: REF@sha256:<hex>.
type imageRef struct {
	name   string // REF, without the digest
	digest string // sha256:<64 lowercase hex>
}

func (r imageRef) String() string { return r.name + "@" + r.digest }

// parseImage parses s, which must pin content by digest: a tag can be
// moved to other content between the auction and the run, a digest cannot.
func parseImage(s string) (imageRef, error) {
	name, hex, ok := strings.Cut(s, "@sha256:")
	if !ok || name == "" {
		return imageRef{}, fmt.Errorf("%w: image %q: want REF@sha256:<digest>", executor.ErrInvalidSpec, s)
	}
	if len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return imageRef{}, fmt.Errorf("%w: image %q: digest is not 64 lowercase hex", executor.ErrInvalidSpec, s)
	}
	if strings.ContainsAny(name, " \t\r\n@") {
		return imageRef{}, fmt.Errorf("%w: image %q: bad name", executor.ErrInvalidSpec, s)
	}
	return imageRef{name: name, digest: "sha256:" + hex}, nil
}

// localImage is what Prepare needs of a resolved image.
type localImage struct {
	id   string // sha256:<hex>, what the container is created from
	user string // the image's USER, empty if none
}

// resolveImage finds ref among the engine's images, pulling it first when
// allowed and missing.
func (e *Executor) resolveImage(ctx context.Context, ref imageRef) (localImage, error) {
	img, err := e.findImage(ctx, ref)
	if err == nil || !cerrdefs.IsNotFound(err) {
		return img, err
	}
	if !e.cfg.Pull {
		return localImage{}, fmt.Errorf("image %s is not on this engine and pulling is off: %w", ref, err)
	}
	if err := e.pull(ctx, ref); err != nil {
		return localImage{}, err
	}
	return e.findImage(ctx, ref)
}

// findImage looks ref up by image ID, then by repo digest. Both name
// content: an image ID is the digest of the image config, which lists the
// digests of its layers.
func (e *Executor) findImage(ctx context.Context, ref imageRef) (localImage, error) {
	ins, err := e.cli.ImageInspect(ctx, ref.digest)
	if err == nil && ins.ID == ref.digest {
		return imageOf(ins), nil
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return localImage{}, fmt.Errorf("inspect image %s: %w", ref.digest, err)
	}
	ins, err = e.cli.ImageInspect(ctx, ref.String())
	if err != nil {
		return localImage{}, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	for _, rd := range ins.RepoDigests {
		if strings.HasSuffix(rd, "@"+ref.digest) {
			return imageOf(ins), nil
		}
	}
	// The engine resolved the name some other way; never run that.
	return localImage{}, fmt.Errorf("inspect image %s: %w", ref, cerrdefs.ErrNotFound)
}

func imageOf(ins image.InspectResponse) localImage {
	img := localImage{id: ins.ID}
	if ins.Config != nil {
		img.user = ins.Config.User
	}
	return img
}

// pull fetches ref by digest. The engine reports pull failures inside the
// progress stream, not as an HTTP error, so the stream is read to the end.
func (e *Executor) pull(ctx context.Context, ref imageRef) error {
	e.log.Info("pulling image", "image", ref.String())
	rc, err := e.cli.ImagePull(ctx, ref.String(), image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("pull %s: %w", ref, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("pull %s: %s", ref, msg.Error)
		}
	}
}
