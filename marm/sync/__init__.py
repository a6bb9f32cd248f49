"""Team memory: replicate a shared project's audit trail through PostgreSQL or a
directory. ``protocol`` says what travels, ``apply`` how a pulled event is applied,
``engine`` runs one sync, ``transport_pg`` and ``transport_dir`` store the events."""
