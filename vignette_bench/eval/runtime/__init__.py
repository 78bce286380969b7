"""Put the questions to a model and keep its answers: questions, the runner, the run folder, merge."""
