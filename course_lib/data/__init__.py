"""Corpora and tasks the lessons train on: Shakespeare (06), English→German number words (08),
dates written many ways (08's extension).
"""
