//! `--device PROFILE` as `rtrec record` and `rtrec bench` take it: how the
//! user named the profile, the checked profile, and the emulator command
//! line that serves it. Here, beside the profiles, so that a recorder's
//! `--device` needs neither the bench nor the machine's journal; starting
//! the emulator process is `rtrec_host::emufs`'s.

use std::ffi::OsString;
use std::path::Path;

use crate::profile::{Profile, BUILTIN};

/// `--device`: how the user named the profile, and the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceArg {
    /// A shipped name, or the canonical path of a profile file (what the
    /// emulator process is given).
    pub spec: String,
    /// The checked profile.
    pub profile: Profile,
}

impl DeviceArg {
    /// What `--device` takes, in the words of both commands' help: every
    /// shipped profile's name, then a profile file (`emmc, sd, hdd-5400,
    /// native, or a profile file`).
    ///
    /// Design choice: derived from the shipped profiles, so that one added
    /// later is named in `rtrec record --help` and `rtrec bench --help`
    /// without an edit to either.
    pub fn choices() -> String {
        let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
        format!("{}, or a profile file", names.join(", "))
    }

    /// Loads and checks a profile by name or file (a clap `value_parser`).
    ///
    /// # Errors
    /// One sentence: no such profile or file, or an invalid profile.
    pub fn parse(s: &str) -> Result<DeviceArg, String> {
        let profile = Profile::load(s).map_err(|e| e.to_string())?;
        let spec = if BUILTIN.iter().any(|(n, _)| *n == s) {
            s.to_string()
        } else {
            Path::new(s)
                .canonicalize()
                .map_err(|e| format!("'{s}': {e}"))?
                .display()
                .to_string()
        };
        Ok(DeviceArg { spec, profile })
    }

    /// The emulator's first arguments for this profile (`__emulate
    /// --profile SPEC`, the command line of [`crate::EmulateArgs`] without
    /// the paths its starter appends), or `None` for a profile that
    /// emulates nothing (`native`).
    pub fn emulator_args(&self) -> Option<Vec<OsString>> {
        if self.profile.is_native() {
            return None;
        }
        Some(vec![
            "__emulate".into(),
            "--profile".into(),
            self.spec.clone().into(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shipped_name_is_kept_and_served_by_name() {
        let d = DeviceArg::parse("emmc").unwrap();
        assert_eq!(d.spec, "emmc");
        assert_eq!(
            d.emulator_args().unwrap(),
            ["__emulate", "--profile", "emmc"].map(OsString::from)
        );
        assert_eq!(DeviceArg::parse("native").unwrap().emulator_args(), None);
    }

    #[test]
    fn the_choices_name_every_shipped_profile_and_a_file() {
        let choices = DeviceArg::choices();
        for (name, _) in BUILTIN {
            assert!(choices.split(", ").any(|c| c == name), "{choices}");
        }
        assert!(choices.ends_with(", or a profile file"), "{choices}");
    }

    #[test]
    fn an_unknown_profile_is_one_sentence() {
        let e = DeviceArg::parse("no-such-profile").unwrap_err();
        assert!(!e.is_empty() && !e.contains('\n'), "{e}");
    }
}
