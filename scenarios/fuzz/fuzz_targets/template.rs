//! The template compiler: any text compiles or is refused; what compiles renders, and renders
//! differently for the two variants exactly when it holds `{{variant}}`.
#![no_main]

use idemspec_scenarios::template::{Template, TemplateVars};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(t) = Template::parse(text) {
        let one = TemplateVars { marker: "M", variant: 1 };
        let two = TemplateVars { marker: "M", variant: 2 };
        let differ = t.render(&one, || "U".into()) != t.render(&two, || "U".into());
        assert_eq!(differ, t.has_variant());
    }
});
