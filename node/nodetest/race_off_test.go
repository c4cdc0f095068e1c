//go:build !race

package nodetest_test

const raceDetector = false
