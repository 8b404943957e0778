//! `karmada-rs completion bash|zsh|fish` (karmadactl's pkg/karmadactl/completion): shell
//! completion code for every command and flag, under the name the binary was run as
//! (`kubectl-karmada` for the kubectl plugin).

use anyhow::bail;
use clap::Args;
use clap_complete::Shell;

/// `karmada-rs completion SHELL`.
#[derive(Args, Clone, Debug)]
pub struct CompletionArgs {
    /// bash, zsh or fish.
    pub shell: Vec<String>,
}

/// The shell, checked with karmadactl's messages.
fn shell(args: &CompletionArgs, path: &str) -> anyhow::Result<Shell> {
    let usage = |m: String| format!("{m}\nSee '{path} -h' for help and examples");
    Ok(match args.shell.as_slice() {
        [] => bail!(usage("Shell not specified.".into())),
        [one] => match one.as_str() {
            "bash" => Shell::Bash,
            "zsh" => Shell::Zsh,
            "fish" => Shell::Fish,
            other => bail!(usage(format!("Unsupported shell type {other:?}."))),
        },
        _ => bail!(usage(
            "Too many arguments. Expected only the shell type.".into()
        )),
    })
}

/// Writes the completion code of `command` (the whole CLI) for the shell.
pub fn completion(
    args: &CompletionArgs,
    mut command: clap::Command,
    bin: &str,
) -> anyhow::Result<()> {
    let shell = shell(args, &format!("{bin} completion"))?;
    clap_complete::generate(shell, &mut command, bin, &mut std::io::stdout());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_are_checked_with_karmadactls_messages() {
        let run = |s: &[&str]| {
            shell(
                &CompletionArgs {
                    shell: s.iter().map(|s| s.to_string()).collect(),
                },
                "karmada-rs completion",
            )
        };
        assert_eq!(run(&["zsh"]).expect("zsh"), Shell::Zsh);
        assert_eq!(
            run(&[]).expect_err("none").to_string(),
            "Shell not specified.\nSee 'karmada-rs completion -h' for help and examples"
        );
        assert_eq!(
            run(&["tcsh"]).expect_err("tcsh").to_string(),
            "Unsupported shell type \"tcsh\".\nSee 'karmada-rs completion -h' for help and examples"
        );
        assert!(run(&["bash", "zsh"]).is_err());
    }
}
