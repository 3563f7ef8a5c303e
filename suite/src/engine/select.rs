//! Which checks of a catalogue run: `--only` and `--skip`, by id.

/// Why a selection cannot run (exit code 2 in the CLI).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// `--only` or `--skip` named a check that does not exist.
    #[error("select checks: no check has id `{0}`")]
    Unknown(String),
    /// `--only` and `--skip` left no check to run: a run that judged nothing must not report
    /// `ok`.
    #[error("select checks: the selection leaves no check to run")]
    Nothing,
    /// Two checks of the catalogue (a user's scenario and another) share an id.
    #[error("select checks: two scenarios have id `{0}`")]
    Duplicate(String),
}

/// The checks of `all` (each known by `id`) that `only` (empty: every one) keeps and `skip` does
/// not remove, in catalogue order.
///
/// # Errors
/// [`SelectError::Duplicate`] when two checks share an id, [`SelectError::Unknown`] when `only`
/// or `skip` names an id no check has, [`SelectError::Nothing`] when they leave none.
pub fn select<T>(
    all: Vec<T>,
    id: impl Fn(&T) -> &str,
    only: &[String],
    skip: &[String],
) -> Result<Vec<T>, SelectError> {
    for (i, check) in all.iter().enumerate() {
        if all[..i].iter().any(|earlier| id(earlier) == id(check)) {
            return Err(SelectError::Duplicate(id(check).to_owned()));
        }
    }
    if let Some(unknown) = only
        .iter()
        .chain(skip)
        .find(|wanted| !all.iter().any(|c| id(c) == wanted.as_str()))
    {
        return Err(SelectError::Unknown(unknown.clone()));
    }
    let named = |list: &[String], c: &T| list.iter().any(|wanted| wanted == id(c));
    let selected: Vec<T> = all
        .into_iter()
        .filter(|c| only.is_empty() || named(only, c))
        .filter(|c| !named(skip, c))
        .collect();
    if selected.is_empty() {
        return Err(SelectError::Nothing);
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(
        all: &[&'static str],
        only: &[&str],
        skip: &[&str],
    ) -> Result<Vec<&'static str>, SelectError> {
        let owned = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        select(all.to_vec(), |s| s, &owned(only), &owned(skip))
    }

    #[test]
    fn only_and_skip_keep_catalogue_order_and_refuse_what_they_cannot_honour() {
        assert_eq!(pick(&["a", "b", "c"], &["c", "a"], &[]), Ok(vec!["a", "c"]));
        assert_eq!(pick(&["a", "b", "c"], &[], &["b"]), Ok(vec!["a", "c"]));
        assert_eq!(
            pick(&["a", "b"], &["z"], &[]),
            Err(SelectError::Unknown("z".into()))
        );
        assert_eq!(pick(&["a", "b"], &["a"], &["a"]), Err(SelectError::Nothing));
        assert_eq!(
            pick(&["a", "b", "a"], &[], &[]),
            Err(SelectError::Duplicate("a".into()))
        );
    }
}
