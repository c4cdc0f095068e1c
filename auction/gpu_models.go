package auction

import "slices"

// KnownGPUFamilies are the GPU families (GPUFamily of a model slug, as
// node/gpu.ModelSlug names NVIDIA's data-centre and consumer cards) that a
// renter may name before any provider offering them is in its market view.
// A job naming a model outside this list and outside the market view is a
// typo (or a made-up name) far more often than a card nobody has listed
// yet, so the renter refuses it at submit with the nearest name. Add a
// family here when a new card ships.
var KnownGPUFamilies = []string{
	"a10", "a10g", "a16", "a2", "a30", "a40", "a100", "a800", "a4000", "a5000", "a6000",
	"b100", "b200", "gb200", "gh200", "h100", "h100-nvl", "h20", "h200", "h800",
	"l4", "l20", "l40", "l40s", "p100", "p40", "p4", "t4", "v100",
	"rtx-3060", "rtx-3070", "rtx-3080", "rtx-3090", "rtx-4060", "rtx-4070", "rtx-4080", "rtx-4090",
	"rtx-5070", "rtx-5080", "rtx-5090", "rtx-a4000", "rtx-a5000", "rtx-a6000", "rtx-6000",
}

// UnknownGPUModel reports whether the model pattern p (a slug or family,
// as a job spec's gpu list holds them) names no card: it matches no known
// family and no model in offered (slugs from the renter's market view).
// A family prefix such as "rtx" or "h100" counts as known when a known
// family or an offered model extends it.
func UnknownGPUModel(p string, offered []string) bool {
	for _, f := range KnownGPUFamilies {
		if ModelMatches(p, f) || GPUFamily(p) == f {
			return false
		}
	}
	return !slices.ContainsFunc(offered, func(m string) bool { return ModelMatches(p, m) })
}
