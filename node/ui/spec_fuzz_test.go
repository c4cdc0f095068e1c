package ui

import (
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/idlegrid/idlegrid/auction"
)

// FuzzJobFormSpec: any form input either is refused with an error or
// becomes YAML that decodes back to the same fields; it never panics.
func FuzzJobFormSpec(f *testing.F) {
	for _, seed := range []jobForm{
		defaultForm,
		{Name: "demo", Module: "bafymodule", Command: "160\n--fast\n", GPUs: "2", GPU: "h100, a100", Tier: "gold", MaxPrice: "2.5"},
		{GPUs: "two"}, {MaxPrice: "cheap"}, {Command: "a: b\n- c\n\"quoted\"\n"}, {Name: "x\ny: injected"},
	} {
		f.Add(seed.Name, seed.Command, seed.GPUs, seed.GPU, seed.MaxPrice)
	}
	f.Fuzz(func(t *testing.T, name, command, gpus, gpu, price string) {
		form := jobForm{Name: name, Command: command, GPUs: gpus, GPU: gpu, MaxPrice: price}
		spec, err := form.spec()
		if err != nil {
			return
		}
		var back auction.JobSpec
		if err := yaml.Unmarshal(spec, &back); err != nil {
			t.Fatalf("form made YAML that does not decode: %v\n%s", err, spec)
		}
		want, _ := form.spec()
		again, err := yaml.Marshal(&back)
		if err != nil || string(again) != string(want) {
			t.Fatalf("round trip changed the spec:\n%s\nvs\n%s", spec, again)
		}
	})
}
