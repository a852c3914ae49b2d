//! The state machine of one id: states, legal transitions, pending transitions.

use super::*;

fn md() -> TxnMetadata {
    TxnMetadata::new("t", 5, 60_000, 100)
}

#[test]
fn ids_and_names_are_kafkas() {
    let expected = [
        (TxnState::Empty, 0, "Empty"),
        (TxnState::Ongoing, 1, "Ongoing"),
        (TxnState::PrepareCommit, 2, "PrepareCommit"),
        (TxnState::PrepareAbort, 3, "PrepareAbort"),
        (TxnState::CompleteCommit, 4, "CompleteCommit"),
        (TxnState::CompleteAbort, 5, "CompleteAbort"),
        (TxnState::Dead, 6, "Dead"),
        (TxnState::PrepareEpochFence, 7, "PrepareEpochFence"),
    ];
    for (s, id, name) in expected {
        assert_eq!(s.id(), id);
        assert_eq!(s.name(), name);
        assert_eq!(TxnState::from_id(id), Some(s));
        assert_eq!(TxnState::from_name(name), Some(s));
    }
    assert_eq!(TxnState::from_id(8), None);
    assert_eq!(TxnState::from_name("ongoing"), None);
}

#[test]
fn transition_table() {
    use TxnState::*;
    let legal: &[(TxnState, TxnState)] = &[
        (Empty, Empty),
        (CompleteCommit, Empty),
        (CompleteAbort, Empty),
        (Empty, Ongoing),
        (Ongoing, Ongoing),
        (CompleteCommit, Ongoing),
        (CompleteAbort, Ongoing),
        (Ongoing, PrepareCommit),
        (Ongoing, PrepareAbort),
        (PrepareEpochFence, PrepareAbort),
        (PrepareCommit, CompleteCommit),
        (PrepareAbort, CompleteAbort),
        (Empty, Dead),
        (CompleteCommit, Dead),
        (CompleteAbort, Dead),
        (Ongoing, PrepareEpochFence),
    ];
    for from in TxnState::ALL {
        for to in TxnState::ALL {
            assert_eq!(
                to.can_follow(from),
                legal.contains(&(from, to)),
                "{from} -> {to}"
            );
        }
    }
    assert!(Empty.expiration_allowed() && CompleteAbort.expiration_allowed());
    assert!(!Ongoing.expiration_allowed() && !PrepareCommit.expiration_allowed());
}

#[test]
fn a_transition_is_prepared_then_completed() {
    let mut m = md();
    let t = m
        .prepare_epoch_bump(60_000, m.next_epochs(None).unwrap(), 200)
        .unwrap();
    assert_eq!((t.state, t.producer_epoch), (TxnState::Empty, 0));
    // Nothing changed yet but the pending state.
    assert_eq!(m.producer_epoch, NO_PRODUCER_EPOCH);
    assert_eq!(m.pending, Some(TxnState::Empty));
    // A second preparation is refused while one is pending.
    let again = m.prepare_add_partitions(&set(&[tp("a", 0)]), 200);
    assert!(matches!(again, Err(TransitionError::AlreadyPending { .. })));
    m.complete_transition(&t).unwrap();
    assert_eq!(
        (m.producer_epoch, m.pending, m.last_update_ms),
        (0, None, 200)
    );

    let t = m.prepare_add_partitions(&set(&[tp("a", 0)]), 300).unwrap();
    m.complete_transition(&t).unwrap();
    assert_eq!(m.state, TxnState::Ongoing);
    assert_eq!((m.start_ms, m.partitions.len()), (300, 1));
    let t = m.prepare_add_partitions(&set(&[tp("a", 1)]), 400).unwrap();
    m.complete_transition(&t).unwrap();
    assert_eq!(
        (m.start_ms, m.partitions.len()),
        (300, 2),
        "the start stays"
    );

    let t = m
        .prepare_abort_or_commit(TxnState::PrepareCommit, 500)
        .unwrap();
    m.complete_transition(&t).unwrap();
    let t = m.prepare_complete(600).unwrap();
    assert_eq!(t.state, TxnState::CompleteCommit);
    m.complete_transition(&t).unwrap();
    assert!(m.partitions.is_empty());
    assert_eq!(
        (m.state, m.start_ms, m.last_update_ms),
        (TxnState::CompleteCommit, 300, 600)
    );
}

#[test]
fn a_failed_write_rolls_back() {
    let mut m = md();
    let t = m.prepare_epoch_bump(60_000, (0, -1), 200).unwrap();
    m.abort_pending();
    assert_eq!(
        (m.producer_epoch, m.pending, m.state),
        (-1, None, TxnState::Empty)
    );
    // The transit can no longer be completed.
    assert!(matches!(
        m.complete_transition(&t),
        Err(TransitionError::NothingPending { .. })
    ));
}

#[test]
fn illegal_transitions_are_refused() {
    let mut m = md();
    m.producer_epoch = 0;
    assert!(matches!(
        m.prepare_abort_or_commit(TxnState::PrepareCommit, 1),
        Err(TransitionError::Illegal {
            from: TxnState::Empty,
            to: TxnState::PrepareCommit,
            ..
        })
    ));
    assert!(m.prepare_complete(1).is_err());
    assert!(m.prepare_epoch_fence_abort(1).is_err());
    assert_eq!(
        m.pending, None,
        "a refused preparation leaves nothing pending"
    );
    // An epoch below 0 is refused.
    assert!(matches!(
        m.prepare_epoch_bump(1, (-1, -1), 1),
        Err(TransitionError::IllegalIds { .. })
    ));
    // Completing something else than what was prepared is refused.
    let mut t = m.prepare_epoch_bump(60_000, (1, -1), 2).unwrap();
    t.producer_epoch = 5;
    assert!(matches!(
        m.complete_transition(&t),
        Err(TransitionError::Mismatch { .. })
    ));
}

#[test]
fn epoch_fence_bumps_once_even_after_a_failed_write() {
    let mut m = md();
    let t = m.prepare_epoch_bump(60_000, (0, -1), 1).unwrap();
    m.complete_transition(&t).unwrap();
    let t = m.prepare_add_partitions(&set(&[tp("a", 0)]), 2).unwrap();
    m.complete_transition(&t).unwrap();

    let t = m.prepare_epoch_fence_abort(3).unwrap();
    assert_eq!((t.state, t.producer_epoch), (TxnState::PrepareAbort, 1));
    // The write failed: the bumped epoch stays in memory, never handed out.
    m.abort_pending();
    m.has_failed_epoch_fence = true;
    let t = m.prepare_epoch_fence_abort(4).unwrap();
    assert_eq!(t.producer_epoch, 1, "no second bump");
    m.complete_transition(&t).unwrap();
    let t = m.prepare_complete(5).unwrap();
    assert!(
        !m.has_failed_epoch_fence,
        "cleared once the abort is recorded"
    );
    m.complete_transition(&t).unwrap();
    assert_eq!((m.state, m.producer_epoch), (TxnState::CompleteAbort, 1));
}

#[test]
fn next_epochs_follow_kip_360() {
    let mut m = md();
    m.producer_epoch = 4;
    m.last_producer_epoch = 3;
    assert_eq!(m.next_epochs(None), Ok((5, NO_PRODUCER_EPOCH)));
    assert_eq!(
        m.next_epochs(Some(4)),
        Ok((5, 4)),
        "the current producer recovers"
    );
    assert_eq!(
        m.next_epochs(Some(3)),
        Ok((4, 3)),
        "a retry of a bump that worked"
    );
    assert_eq!(m.next_epochs(Some(2)), Err(ErrorCode::PRODUCER_FENCED));
    assert!(epoch_exhausted(i16::MAX - 1) && !epoch_exhausted(i16::MAX - 2));
}

#[test]
fn rotation_starts_a_new_producer_id_at_epoch_0() {
    let mut m = md();
    m.producer_epoch = i16::MAX - 1;
    let t = m.prepare_producer_id_rotation(77, 60_000, 9, true).unwrap();
    assert_eq!(
        (t.producer_id, t.producer_epoch, t.last_producer_epoch),
        (77, 0, i16::MAX - 1)
    );
    assert_eq!(t.last_producer_id, 5);
    m.complete_transition(&t).unwrap();
    assert_eq!(
        (m.producer_id, m.last_producer_id, m.producer_epoch),
        (77, 5, 0)
    );
}
