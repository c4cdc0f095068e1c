package forward

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limits bound one tunnel's bytes. Zero means the default.
type Limits struct {
	// RateBytes is the most bytes per second each way (default 256 MiB/s).
	RateBytes int
	// MaxBytes is the most bytes one tunnel carries each way (default 64 GiB).
	MaxBytes int64
	// Idle closes a tunnel that carried nothing either way for this long
	// (default 10 min).
	Idle time.Duration
}

const copyBuf = 32 << 10

func (l Limits) withDefaults() Limits {
	if l.RateBytes <= 0 {
		l.RateBytes = 256 << 20
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 64 << 30
	}
	if l.Idle <= 0 {
		l.Idle = 10 * time.Minute
	}
	return l
}

// errIdle and errTooMuch end a tunnel past its limits.
var (
	errIdle    = errors.New("forward: tunnel idle")
	errTooMuch = errors.New("forward: tunnel byte limit reached")
)

type closeWriter interface{ CloseWrite() error }

// pipe copies a→b and b→a until both directions end, either side fails,
// ctx ends or a limit is reached; it then closes both. A direction that
// reaches EOF half-closes its destination, so request/response protocols
// that close their sending side still get their answer. seen, when set, is
// called with each chunk and its direction (true: a→b) before it is
// written.
func pipe(ctx context.Context, a, b io.ReadWriteCloser, lim Limits, seen func(aToB bool, n int)) error {
	lim = lim.withDefaults()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var closeOnce sync.Once
	closeBoth := func() { closeOnce.Do(func() { _ = a.Close(); _ = b.Close() }) }
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()
	go func() {
		t := time.NewTicker(min(lim.Idle/4, time.Second))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if time.Since(time.Unix(0, last.Load())) > lim.Idle {
					cancel(errIdle)
					return
				}
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	one := func(i int, dst, src io.ReadWriteCloser) {
		defer wg.Done()
		lr := rate.NewLimiter(rate.Limit(lim.RateBytes), max(lim.RateBytes, copyBuf))
		buf := make([]byte, copyBuf)
		var total int64
		for {
			n, err := src.Read(buf)
			if n > 0 {
				last.Store(time.Now().UnixNano())
				if total += int64(n); total > lim.MaxBytes {
					cancel(errTooMuch)
					errs[i] = errTooMuch
					return
				}
				if werr := lr.WaitN(ctx, n); werr != nil {
					errs[i] = werr
					return
				}
				if seen != nil {
					seen(i == 0, n)
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					errs[i] = werr
					cancel(werr)
					return
				}
			}
			if errors.Is(err, io.EOF) {
				if cw, ok := dst.(closeWriter); ok {
					_ = cw.CloseWrite()
				} else {
					closeBoth()
				}
				return
			}
			if err != nil {
				errs[i] = err
				cancel(err)
				return
			}
		}
	}
	wg.Add(2)
	go one(0, b, a)
	go one(1, a, b)
	wg.Wait()
	closeBoth()
	if c := context.Cause(ctx); errors.Is(c, errIdle) || errors.Is(c, errTooMuch) {
		return c
	}
	return nil
}
