package provider

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/store"
)

// hostFacts describes the machine around the GPUs. Configured values win;
// zeros are detected (CPU count, MemTotal, free disk under the home).
func hostFacts(c OfferConfig, home string) auction.Host {
	h := auction.Host{
		CPUCores:      uint32(c.CPUCores),
		RAMMiB:        uint64(c.RAMMiB),
		DiskGiB:       uint64(c.DiskGiB),
		BandwidthMbps: uint32(c.BandwidthMbps),
	}
	if h.CPUCores == 0 {
		h.CPUCores = uint32(runtime.NumCPU())
	}
	if h.RAMMiB == 0 {
		h.RAMMiB = memTotalMiB()
	}
	if h.DiskGiB == 0 && home != "" {
		if free, err := store.FreeBytes(home); err == nil {
			h.DiskGiB = free >> 30
		}
	}
	return h
}

// memTotalMiB reads MemTotal from /proc/meminfo (0 when unavailable).
func memTotalMiB() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb >> 10
	}
	return 0
}
