//go:build race

package nodetest_test

// raceDetector is on: the race detector slows every node five- to tenfold
// and multiplies its memory, so the 100-provider cluster runs in its own
// pass without it (make test).
const raceDetector = true
